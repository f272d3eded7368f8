# frozen_string_literal: true

require_relative "../errors"
require_relative "resolvers/explicit_mapping_resolver"
require_relative "resolvers/class_constant_resolver"
require_relative "resolvers/method_dispatch_wrapper"

module TaskerCore
  module Registry
    # Resolvers by priority (upstream's handler resolution): a definition with a resolver hint goes
    # to that resolver alone; otherwise the first resolver that resolves it wins. A handler.method
    # other than `call` wraps the handler so that `call` invokes that method.
    class ResolverChain
      def self.default
        new.add_resolver(Resolvers::ExplicitMappingResolver.new).add_resolver(Resolvers::ClassConstantResolver.new)
      end

      def initialize
        @resolvers = []
        @lock = Mutex.new
      end

      # Adds a resolver (replacing one of the same name).
      def add_resolver(resolver)
        @lock.synchronize do
          @resolvers = (@resolvers.reject { |r| r.name == resolver.name } + [resolver]).sort_by(&:priority)
        end
        self
      end

      def remove_resolver(name) = @lock.synchronize { @resolvers.reject! { |r| r.name == name } }
      def resolvers = @lock.synchronize { @resolvers.dup }
      def resolver_names = resolvers.map(&:name)
      def get_resolver(name) = resolvers.find { |r| r.name == name }
      def explicit_resolver = get_resolver("explicit_mapping")
      def registered_callables = resolvers.flat_map(&:registered_callables).uniq

      # The handler for `definition`, ready to `call(context)`.
      #
      # @raise [Errors::ResolutionError] (error_type handler_not_found, unknown_resolver or
      #   method_not_found) naming the callable, resolver or method
      def resolve(definition)
        handler = definition.has_resolver_hint? ? resolve_with_hint(definition) : resolve_with_chain(definition)
        wrap_for_method_dispatch(handler, definition)
      end

      # Whether some resolver (the hinted one, if any) can resolve `definition`.
      def can_resolve?(definition)
        return get_resolver(definition.resolver)&.can_resolve?(definition) || false if definition.has_resolver_hint?

        resolvers.any? { |r| r.can_resolve?(definition) }
      end

      private

      def resolve_with_hint(definition)
        resolver = get_resolver(definition.resolver)
        unless resolver
          raise Errors::ResolutionError.new(
            "unknown resolver #{definition.resolver.inspect} (handler.resolver of callable #{definition.callable.inspect}); " \
            "known resolvers: #{resolver_names.join(', ')}", error_type: "unknown_resolver"
          )
        end
        resolver.resolve(definition) || raise(Errors::ResolutionError,
                                              "resolver #{resolver.name.inspect} has no handler for callable #{definition.callable.inspect}")
      end

      def resolve_with_chain(definition)
        resolvers.each do |resolver|
          next unless resolver.can_resolve?(definition)

          handler = resolver.resolve(definition)
          return handler if handler
        end
        raise Errors::ResolutionError, "no Ruby handler for callable #{definition.callable.inspect} " \
                                       "(resolvers tried: #{resolver_names.join(', ')})"
      end

      def wrap_for_method_dispatch(handler, definition)
        return handler if handler.respond_to?(:call) && !definition.uses_method_dispatch?

        method = definition.effective_method
        # Only the handler's own public entry points: never Object's (send, instance_eval, ...),
        # Proc's or the SDK's helpers (see MethodDispatchWrapper.dispatchable?).
        unless Resolvers::MethodDispatchWrapper.dispatchable?(handler, method)
          raise Errors::ResolutionError.new(
            "handler #{definition.callable.inspect} (#{handler.is_a?(Proc) ? 'a block' : handler.class}) has no method " \
            "#{method.inspect} (handler.method of callable #{definition.callable.inspect})", error_type: "method_not_found"
          )
        end
        Resolvers::MethodDispatchWrapper.new(handler, method)
      end
    end
  end
end
