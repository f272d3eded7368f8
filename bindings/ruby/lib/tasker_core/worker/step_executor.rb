# frozen_string_literal: true

require_relative "../ffi"
require_relative "../logger"
require_relative "../types/step_context"
require_relative "../types/step_handler_call_result"
require_relative "../registry/handler_registry"

module TaskerCore
  module Worker
    # Runs one polled step event: builds its StepContext, resolves and calls the handler, and
    # answers the event exactly once (its result, or a checkpoint). Nothing raises out of #execute:
    # a malformed event, an unresolvable handler, a handler exception, a result that cannot be
    # written or that the worker refuses, each becomes the step's failure result.
    class StepExecutor
      Result = Types::StepHandlerCallResult

      def initialize(registry:, worker_id: nil, logger: TaskerCore::Logger.new("ruby_step_executor"))
        @registry = registry
        @worker_id = worker_id
        @logger = logger
      end

      attr_accessor :worker_id

      # @param event [Hash] a polled step event
      def execute(event)
        started = monotonic
        event_id = event.is_a?(Hash) ? event["event_id"] : nil
        unless event_id.is_a?(String) && !event_id.empty?
          @logger.error("step event without event_id dropped (the channel's timeout settles it)",
                        "event" => event.inspect[0, 200])
          return
        end
        step_uuid = event["step_uuid"].to_s
        begin
          context = Types::StepContext.new(event)
        rescue StandardError => e
          complete(event_id, step_uuid, Result.error(message: "malformed step event: #{e.message}", error_type: "event_error"),
                   started)
          return
        end
        outcome = invoke(context)
        return if outcome.checkpoint? && checkpoint(event_id, context, outcome)

        outcome = Result.error(message: "checkpoint refused", error_type: "checkpoint_error", retryable: true) if outcome.checkpoint?
        complete(event_id, context.step_uuid, outcome, started)
      rescue StandardError => e
        # Last line of defence: the poll thread survives, the step still gets a result.
        @logger.error("step event failed: #{e.class}: #{e.message}", "step_uuid" => step_uuid.to_s)
        complete(event_id, step_uuid.to_s, Result.from_exception(e), started, fallback: false) if event_id.is_a?(String)
      end

      # The handler's outcome for `context` (never raises).
      def invoke(context)
        handler = @registry.resolve_handler(context.handler_definition)
        Result.from_handler_output(handler.call(context))
      rescue Exception => e # rubocop:disable Lint/RescueException -- even `exit` in a handler must not end its thread
        Result.from_exception(e)
      end

      private

      # True when the checkpoint was taken (or the event is gone); false to fail the step instead.
      def checkpoint(event_id, context, outcome)
        TaskerCore::FFI.checkpoint_yield_step_event(event_id, outcome.to_checkpoint_data(step_uuid: context.step_uuid))
        true
      rescue Errors::FFIError => e
        # Unknown (timed out) or refused (the worker gave the step its error result): nothing left to do.
        return warn_unaccepted("checkpoint", e, context.step_uuid) if [TaskerCore::FFI::ERR_UNKNOWN_EVENT,
                                                                        TaskerCore::FFI::ERR_REFUSED].include?(e.status)

        @logger.error("checkpoint refused: #{e.message}", "step_uuid" => context.step_uuid)
        false
      rescue JSON::JSONError => e
        @logger.error("checkpoint is not JSON: #{e.message}", "step_uuid" => context.step_uuid)
        false
      end

      def complete(event_id, step_uuid, outcome, started, fallback: true)
        elapsed = ((monotonic - started) * 1000).round
        document = Result.execution_result(outcome, step_uuid: step_uuid, execution_time_ms: elapsed, worker_id: @worker_id)
        TaskerCore::FFI.complete_step_event(event_id, document)
      rescue JSON::JSONError, EncodingError => e
        # The handler's result cannot be written (nested too deeply, NaN, bad encoding): fails for good.
        fallback && complete(event_id, step_uuid, Result.error(message: "the handler's result is not JSON: #{e.message}",
                                                               error_type: "handler_error"), started, fallback: false)
      rescue Errors::FFIError => e
        # Refused (ERR_REFUSED) results already got their error result from the worker.
        if fallback && e.status == TaskerCore::FFI::ERR_INVALID_ARGUMENT
          complete(event_id, step_uuid, Result.error(message: "the worker refused the handler's result: #{e.message}",
                                                     error_type: "handler_error"), started, fallback: false)
        else
          warn_unaccepted("result", e, step_uuid)
        end
      end

      def warn_unaccepted(what, error, step_uuid)
        @logger.warn("#{what} not accepted: #{error.message}", "step_uuid" => step_uuid)
        true
      end

      def monotonic = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
