# frozen_string_literal: true

require_relative "base_resolver"

module TaskerCore
  module Registry
    module Resolvers
      # A callable naming a loaded class (`Payments::RefundHandler`) resolves to a new instance of it
      # (with config: initialization). Only constant paths are looked up, and only classes with a public
      # #call or the definition's method resolve. Priority 100: tried after explicit mappings.
      class ClassConstantResolver < BaseResolver
        PRIORITY = 100
        CONSTANT_PATH = /\A(::)?[A-Z]\w*(::[A-Z]\w*)*\z/

        def name = "class_constant"
        def priority = PRIORITY
        def can_resolve?(definition) = CONSTANT_PATH.match?(definition.callable.to_s)

        def resolve(definition)
          return nil unless can_resolve?(definition)

          klass = Object.const_get(definition.callable.to_s)
          return nil unless klass.is_a?(Class)
          # A class with `call` but not the definition's method still resolves: the chain then
          # fails the step naming the missing method.
          return nil unless klass.public_method_defined?(:call) || klass.public_method_defined?(definition.effective_method)

          instantiate(klass, definition.initialization)
        rescue NameError
          nil
        end
      end
    end
  end
end
