# frozen_string_literal: true

module TaskerCore
  module Registry
    module Resolvers
      # Makes `call(context)` invoke another method of a handler (a template's handler.method), so
      # one handler class can serve several steps (charge, refund, void).
      class MethodDispatchWrapper
        attr_reader :handler, :target_method

        # @raise [ArgumentError] the handler has no public `target_method`
        def initialize(handler, target_method)
          @handler = handler
          @target_method = target_method.to_sym
          return if handler.respond_to?(@target_method)

          raise ArgumentError, "#{handler.class} does not respond to ##{@target_method}"
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
