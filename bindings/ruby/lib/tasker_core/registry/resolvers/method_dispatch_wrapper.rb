# frozen_string_literal: true

module TaskerCore
  module Registry
    module Resolvers
      # Makes `call(context)` invoke another method of a handler (a template's handler.method), so
      # one handler class can serve several steps (charge, refund, void).
      #
      # Only the handler's own entry points are reachable: public methods that its class (or its
      # singleton, or a module it includes) defines. Methods every object has (`send`,
      # `instance_eval`, `public_send`, `method`, `system`, `to_json`, ...), methods of Proc/Method
      # and the SDK's helpers on StepHandler::Base and its capability mixins (`success`, `get`,
      # `decision_success`, ...) are not: a template cannot turn them into a step.
      class MethodDispatchWrapper
        # A method name a template may use: a plain Ruby identifier.
        METHOD_NAME = /\A[a-z_][a-zA-Z0-9_]*[?!]?\z/

        attr_reader :handler, :target_method

        # Whether `handler` has `method` as an entry point (see the class comment).
        def self.dispatchable?(handler, method)
          method = method.to_s
          return false unless METHOD_NAME.match?(method)

          owner = entry_point_owner(handler, method.to_sym)
          return false unless owner
          return true if method == "call"

          !sdk_or_core_owner?(owner)
        end

        # The module defining `handler`'s public `method`, or nil.
        def self.entry_point_owner(handler, method)
          klass = begin
            Kernel.instance_method(:singleton_class).bind_call(handler)
          rescue TypeError
            Kernel.instance_method(:class).bind_call(handler)
          end
          return nil unless klass.public_method_defined?(method)

          klass.instance_method(method).owner
        end

        # Owners whose methods are never entry points (other than `call`).
        def self.sdk_or_core_owner?(owner)
          return true if Object.ancestors.include?(owner) || [Proc, Method, UnboundMethod].include?(owner)

          mixins = defined?(TaskerCore::StepHandler::Mixins) ? TaskerCore::StepHandler::Mixins.constants.map { |c| TaskerCore::StepHandler::Mixins.const_get(c) } : []
          owner == TaskerCore::StepHandler::Base || mixins.include?(owner)
        end
        private_class_method :entry_point_owner, :sdk_or_core_owner?

        # @raise [ArgumentError] `target_method` is not one of the handler's entry points
        def initialize(handler, target_method)
          @handler = handler
          @target_method = target_method.to_sym
          return if self.class.dispatchable?(handler, @target_method)

          raise ArgumentError, "#{handler.class} has no entry point ##{@target_method}"
        end

        def call(context) = @handler.public_send(@target_method, context)

        def unwrap = @handler
        def handler_class = @handler.class

        def to_s = "#<MethodDispatchWrapper handler=#{@handler.class} method=#{@target_method}>"
        alias inspect to_s
      end
    end
  end
end
