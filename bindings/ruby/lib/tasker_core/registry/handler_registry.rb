# frozen_string_literal: true

require_relative "resolver_chain"
require_relative "../types/handler_definition"

module TaskerCore
  module Registry
    # Where the worker finds the handler of a step: explicit registrations (name → class or
    # callable) and loaded classes named by the callable, through a ResolverChain.
    #
    #   registry = TaskerCore::Registry::HandlerRegistry.instance
    #   registry.register_handler("shop.greet", GreetHandler)
    #   registry.register_handler("shop.wave") { |context| { "waved" => true } }
    class HandlerRegistry
      attr_reader :resolver_chain

      # The registry the worker uses unless given another.
      def self.instance = (@instance ||= new)

      # Forgets the shared registry (tests).
      def self.reset_instance! = (@instance = nil)

      def initialize(resolver_chain: ResolverChain.default)
        @resolver_chain = resolver_chain
      end

      # Registers a handler class, a callable (Proc, object with #call) or a block for `name`.
      #
      # @raise [ArgumentError] neither a handler nor a block, or something not callable
      def register_handler(name, handler = nil, &block)
        handler ||= block
        raise ArgumentError, "register_handler(#{name.inspect}) needs a handler class, a callable or a block" unless handler

        explicit = @resolver_chain.explicit_resolver || raise(ArgumentError, "the resolver chain has no explicit_mapping resolver")
        explicit.register(name, handler)
        self
      end
      alias register register_handler

      # A handler ready to `call(context)` for `spec` (a callable string, a HandlerDefinition or a
      # step definition's `handler` hash).
      #
      # @raise [Errors::ResolutionError] nothing resolves it (the message says what was wrong)
      def resolve_handler(spec) = @resolver_chain.resolve(definition_of(spec))
      alias resolve resolve_handler

      def handler_available?(spec) = @resolver_chain.can_resolve?(definition_of(spec))

      # Registered names, sorted.
      def registered_handlers = @resolver_chain.registered_callables.sort

      def add_resolver(resolver)
        @resolver_chain.add_resolver(resolver)
        self
      end

      private

      def definition_of(spec)
        case spec
        when Types::HandlerDefinition then spec
        when Hash then Types::HandlerDefinition.from_hash(spec.transform_keys(&:to_s))
        else Types::HandlerDefinition.new(callable: spec.to_s, initialization: {})
        end
      end
    end
  end
end
