# frozen_string_literal: true

module TaskerCore
  module Types
    # What a handler returns: Success, Error or CheckpointYield (build them with
    # StepHandler::Base#success / #failure / #checkpoint_yield). The worker turns a Hash into a
    # Success with that result, nil into Success({}), and an exception into an Error.
    module StepHandlerCallResult
      # The step succeeded with `result` (any JSON value; dependants read it). `metadata` lands in
      # the stored result's metadata.custom.
      Success = Struct.new(:result, :metadata, keyword_init: true) do
        def success? = true
        def checkpoint? = false
      end

      # The step failed; retried (with backoff, up to max_attempts) when `retryable`.
      Error = Struct.new(:error_type, :message, :error_code, :retryable, :metadata, keyword_init: true) do
        def success? = false
        def checkpoint? = false
      end

      # Progress to persist; the step then runs again with StepContext#checkpoint set.
      CheckpointYield = Struct.new(:cursor, :items_processed, :accumulated_results, keyword_init: true) do
        def success? = false
        def checkpoint? = true

        # The document for tasker_checkpoint_yield_step_event.
        def to_checkpoint_data(step_uuid:)
          { "step_uuid" => step_uuid, "cursor" => cursor, "items_processed" => items_processed,
            "accumulated_results" => accumulated_results }
        end
      end

      # Error types of exceptions that have a name of their own upstream.
      NAMED_ERRORS = {
        "TaskerCore::Errors::ValidationError" => "ValidationError",
        "TaskerCore::Errors::PermanentError" => "PermanentError",
        "TaskerCore::Errors::RetryableError" => "RetryableError"
      }.freeze

      # Lines of a backtrace kept in a failure's metadata.
      BACKTRACE_LINES = 20

      module_function

      def success(result:, metadata: {}) = Success.new(result: result, metadata: metadata || {})

      def error(message:, error_type: "UnexpectedError", error_code: nil, retryable: false, metadata: {})
        Error.new(error_type: error_type.to_s, message: message.to_s, error_code: error_code&.to_s,
                  retryable: retryable ? true : false, metadata: metadata || {})
      end

      def checkpoint_yield(cursor:, items_processed: 0, accumulated_results: nil)
        count = Integer(items_processed)
        raise ArgumentError, "items_processed must be >= 0, got #{count}" if count.negative?

        CheckpointYield.new(cursor: cursor, items_processed: count, accumulated_results: accumulated_results)
      end

      # Normalizes whatever a handler returned.
      def from_handler_output(output)
        case output
        when Success, Error, CheckpointYield then output
        when nil then success(result: {})
        else success(result: output)
        end
      end

      # The failure of a handler that raised `exception`: its class as error_type (upstream's short
      # names for TaskerCore's own errors), its message, retryable unless a permanent kind, and
      # metadata.custom {"exception_class", "stack_trace"} (upstream tasker-rb's keys, which
      # `tasker-dev task show` and the console display) plus error_code / context / retry_after.
      def from_exception(exception)
        klass = exception.class.name || exception.class.inspect
        metadata = { "exception_class" => klass,
                     "stack_trace" => (exception.backtrace || []).first(BACKTRACE_LINES).join("\n") }
        metadata["context"] = exception.context if exception.respond_to?(:context) && !exception.context.to_h.empty?
        metadata["retry_after"] = exception.retry_after if exception.respond_to?(:retry_after) && exception.retry_after
        message = exception.message.to_s
        error(message: message.empty? ? klass : message,
              error_type: NAMED_ERRORS.fetch(klass) { exception.is_a?(Errors::ResolutionError) ? exception.error_type : klass },
              error_code: exception.respond_to?(:error_code) ? exception.error_code : nil,
              retryable: Errors.retryable?(exception), metadata: metadata)
      end

      # The StepExecutionResult document for tasker_complete_step_event.
      def execution_result(outcome, step_uuid:, execution_time_ms:, worker_id:)
        metadata = { "execution_time_ms" => [execution_time_ms.to_i, 0].max, "worker_id" => worker_id,
                     "retryable" => !outcome.success? && outcome.retryable ? true : false,
                     "custom" => (outcome.metadata || {}).to_h }
        if outcome.success?
          { "step_uuid" => step_uuid, "success" => true, "status" => "completed", "result" => outcome.result,
            "metadata" => metadata }
        else
          metadata["error_type"] = outcome.error_type
          metadata["error_code"] = outcome.error_code
          { "step_uuid" => step_uuid, "success" => false, "status" => "failed", "result" => {}, "metadata" => metadata,
            "error" => { "message" => outcome.message, "error_type" => outcome.error_type,
                         "retryable" => outcome.retryable ? true : false } }
        end
      end
    end
  end
end
