# frozen_string_literal: true

require_relative "base_resolver"
require_relative "../../step_handler/base"

module TaskerCore
  module Registry
    module Resolvers
      # A callable naming a loaded step handler class (`Payments::RefundHandler`) resolves to a new
      # instance of it (with config: initialization). Priority 100: tried after explicit mappings.
      #
      # A template is configuration, not code: only constant paths are looked up, and only strict
      # subclasses of TaskerCore::StepHandler::Base resolve. Any other constant (`File`, `Kernel`,
      # `Object`, `Tempfile`, a class that merely has #call) resolves to nothing, so a template can
      # neither instantiate arbitrary classes nor reach their methods. Other handlers (blocks,
      # callables, plain classes) are registered by name (ExplicitMappingResolver).
      class ClassConstantResolver < BaseResolver
        PRIORITY = 100
        CONSTANT_PATH = /\A(::)?[A-Z]\w*(::[A-Z]\w*)*\z/

        def name = "class_constant"
        def priority = PRIORITY
        def can_resolve?(definition) = CONSTANT_PATH.match?(definition.callable.to_s)

        def resolve(definition)
          return nil unless can_resolve?(definition)

          klass = Object.const_get(definition.callable.to_s)
          return nil unless step_handler_class?(klass)

          # The method (handler.method) is checked by the chain, which fails the step naming it.
          instantiate(klass, definition.initialization)
        rescue NameError, LoadError
          nil
        end

        # Whether `klass` is a class this resolver may instantiate: a strict subclass of Base.
        def step_handler_class?(klass)
          klass.is_a?(Class) && !klass.equal?(StepHandler::Base) && StepHandler::Base > klass ? true : false
        end
      end
    end
  end
end
