# frozen_string_literal: true

require_relative "base_resolver"

module TaskerCore
  module Registry
    module Resolvers
      # Registered name → handler class, callable (Proc, lambda, object with #call) or instance.
      # Priority 10: explicit registrations win.
      class ExplicitMappingResolver < BaseResolver
        PRIORITY = 10

        def initialize(name = "explicit_mapping")
          super()
          @name = name
          @handlers = {}
          @lock = Mutex.new
        end

        attr_reader :name

        def priority = PRIORITY

        # @raise [ArgumentError] `handler` is neither a class nor something callable
        def register(key, handler)
          unless handler.is_a?(Class) || handler.respond_to?(:call)
            raise ArgumentError, "the handler for #{key.inspect} is a #{handler.class}: expected a class or a callable"
          end

          @lock.synchronize { @handlers[key.to_s] = handler }
        end

        def unregister(key) = @lock.synchronize { @handlers.delete(key.to_s) }
        def registered?(key) = @lock.synchronize { @handlers.key?(key.to_s) }
        def registered_callables = @lock.synchronize { @handlers.keys }
        def can_resolve?(definition) = registered?(definition.callable)

        def resolve(definition)
          handler = @lock.synchronize { @handlers[definition.callable.to_s] }
          handler && instantiate(handler, definition.initialization)
        end
      end
    end
  end
end
