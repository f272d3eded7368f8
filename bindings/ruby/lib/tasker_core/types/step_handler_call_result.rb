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
      #
      # Never raises: an exception whose #message, #to_s, #backtrace, #class or class name raise
      # (anything, even `exit` or `throw`) still gives a failure, with placeholders for those parts.
      def from_exception(exception)
        klass = exception_class_name(exception)
        metadata = { "exception_class" => klass,
                     "stack_trace" => guarded("") { Array(exception.backtrace).first(BACKTRACE_LINES).map { |l| text(l) }.join("\n") } }
        context = guarded(nil) { exception.context.to_h if exception.respond_to?(:context) && !exception.context.to_h.empty? }
        metadata["context"] = context if context
        retry_after = guarded(nil) { exception.retry_after if exception.respond_to?(:retry_after) }
        metadata["retry_after"] = retry_after if retry_after.is_a?(Numeric)
        message = guarded(nil) { text(exception.message) } || guarded(nil) { text(exception.to_s) } ||
                  "#{klass} (its message could not be read)"
        resolution = Errors::ResolutionError === exception # rubocop:disable Style/CaseEquality -- no method of the exception is called
        error(message: message.empty? ? klass : message,
              error_type: NAMED_ERRORS.fetch(klass) { resolution ? guarded(klass) { text(exception.error_type) } : klass },
              error_code: guarded(nil) { exception.respond_to?(:error_code) && exception.error_code ? text(exception.error_code) : nil },
              retryable: Errors.retryable?(exception), metadata: metadata)
      end

      # The exception's real class name (not whatever an overridden #class or .name answer).
      def exception_class_name(exception)
        klass = Kernel.instance_method(:class).bind_call(exception)
        guarded(nil) { Module.instance_method(:name).bind_call(klass) } ||
          guarded("(anonymous exception class)") { Module.instance_method(:to_s).bind_call(klass) }
      end

      # The block's value, or `default` when it raises anything at all.
      def guarded(default)
        yield
      rescue Exception # rubocop:disable Lint/RescueException -- a hostile exception must still become a result
        default
      end

      # A String (valid UTF-8) for a value that should be one; raises when it is not a String.
      def text(value)
        raise TypeError, "not a String" unless String === value # rubocop:disable Style/CaseEquality

        value.dup.force_encoding(Encoding::UTF_8).scrub
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
