# frozen_string_literal: true

require_relative "../types/step_handler_call_result"
require_relative "../logger"

module TaskerCore
  module StepHandler
    # Base class of class-style handlers. Subclasses implement `call(context)` (or, for a template
    # with `handler.method: refund`, `refund(context)`) and return #success, #failure,
    # #checkpoint_yield, a Hash (a success with that result) or nil (success, {}). Raising fails
    # the step: TaskerCore::PermanentError for good, anything else retryably.
    #
    #   class GreetHandler < TaskerCore::StepHandler::Base
    #     def call(context)
    #       name = context.get_input("name") or return failure(message: "name missing", error_type: "ValidationError")
    #       success(result: { greeting: "#{config['greeting']}, #{name}" })
    #     end
    #   end
    class Base
      # The template's handler.initialization (string keys) and the logger.
      attr_reader :config, :logger

      class << self
        # The handler's registered name (defaults to the class name in snake_case).
        def handler_name(name = nil)
          @handler_name = name.to_s if name
          @handler_name || default_handler_name
        end

        # The handler's version (VERSION constant, else "1.0.0").
        def handler_version(version = nil)
          @handler_version = version.to_s if version
          @handler_version || (const_defined?(:VERSION) ? const_get(:VERSION).to_s : "1.0.0")
        end

        private

        def default_handler_name
          (name || "anonymous_handler").split("::").last.gsub(/([a-z\d])([A-Z])/, '\1_\2').downcase
        end
      end

      def initialize(config: {}, logger: nil)
        @config = (config || {}).to_h.transform_keys(&:to_s)
        @logger = logger || TaskerCore::Logger.instance
      end

      # The business logic. Subclasses override it.
      def call(_context)
        raise NotImplementedError, "#{self.class} must implement #call(context)"
      end

      def handler_name = self.class.handler_name
      def handler_version = self.class.handler_version

      # What the handler can do (capability mixins add theirs).
      def capabilities = ["process"]

      # Name, class, version and capabilities, for logs and introspection.
      def metadata
        { handler_name: handler_name, handler_class: self.class.name, version: handler_version,
          capabilities: capabilities, ruby_version: RUBY_VERSION }
      end

      # The step succeeded with `result` (any JSON value; `result_data:` is an alias).
      # `metadata` lands in the stored result's metadata.custom.
      def success(result: nil, result_data: nil, metadata: {})
        value = result.nil? ? result_data : result
        raise ArgumentError, "success needs result: (or result_data:)" if value.nil?

        Types::StepHandlerCallResult.success(result: value, metadata: metadata)
      end

      # The step failed. `retryable: false` (the default, as upstream) ends the task in error; true
      # lets orchestration retry it up to the template's max_attempts.
      def failure(message:, error_type: "UnexpectedError", error_code: nil, retryable: false, metadata: {})
        Types::StepHandlerCallResult.error(message: message, error_type: error_type, error_code: error_code,
                                           retryable: retryable, metadata: metadata)
      end

      # Persist progress and run the step again; the next run sees it as context.checkpoint.
      def checkpoint_yield(cursor:, items_processed: 0, accumulated_results: nil)
        Types::StepHandlerCallResult.checkpoint_yield(cursor: cursor, items_processed: items_processed,
                                                      accumulated_results: accumulated_results)
      end
    end
  end
end
