# frozen_string_literal: true

module TaskerCore
  module Registry
    module Resolvers
      # A resolver turns a HandlerDefinition into a handler object (anything answering the
      # definition's method). Subclass it and add it with HandlerRegistry#add_resolver.
      class BaseResolver
        # The name a template's handler.resolver hint uses.
        def name = raise(NotImplementedError, "#{self.class}#name")

        # Lower runs first in the chain.
        def priority = raise(NotImplementedError, "#{self.class}#priority")

        def can_resolve?(_definition) = raise(NotImplementedError, "#{self.class}#can_resolve?")

        # The handler for `definition`, or nil.
        def resolve(_definition) = raise(NotImplementedError, "#{self.class}#resolve")

        # Callables this resolver knows by name.
        def registered_callables = []

        private

        # A handler class instantiated with config: initialization when its initialize takes it;
        # a Proc or an object stays as it is.
        def instantiate(handler, initialization)
          return handler unless handler.is_a?(Class)

          params = handler.instance_method(:initialize).parameters
          takes_config = params.any? { |type, name| %i[key keyreq].include?(type) && name == :config } ||
                         params.any? { |type, _| type == :keyrest }
          takes_config ? handler.new(config: initialization || {}) : handler.new
        end
      end
    end
  end
end
