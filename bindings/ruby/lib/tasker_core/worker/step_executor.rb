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
    # a malformed event, an unresolvable handler, a handler exception (any Exception, even `exit`,
    # `throw` or one whose #message raises), a result that cannot be written or that the worker
    # refuses, each becomes the step's failure result. A handler thread killed mid-step
    # (Thread.exit, Thread#kill) still answers the event, from an ensure.
    class StepExecutor
      Result = Types::StepHandlerCallResult

      # Whether the event got its answer (one per event; shared by the paths of one #execute).
      Answer = Struct.new(:sent)

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
          log(:error, "step event without event_id dropped (the channel's timeout settles it)") { { "event" => event.inspect[0, 200] } }
          return
        end
        step_uuid = event["step_uuid"].to_s
        answer = Answer.new(false)
        failure = nil
        begin
          process(event, event_id, step_uuid, started, answer)
        rescue Exception => e # rubocop:disable Lint/RescueException -- the handler thread must survive anything
          failure = e
          log(:error, "step event failed: #{describe(e)}") { { "step_uuid" => step_uuid } }
        ensure
          # Last line of defence: every event polled gets exactly one answer, even when something
          # above raised past its own rescues or the thread is being killed.
          unless answer.sent
            outcome = failure ? Result.from_exception(failure) : Result.error(message: "the Ruby handler thread ended before the step was answered",
                                                                               error_type: "handler_error", retryable: true)
            guarded { complete(event_id, step_uuid, outcome, started, answer, fallback: false) }
          end
        end
      end

      # The handler's outcome for `context` (never raises).
      def invoke(context)
        handler = @registry.resolve_handler(context.handler_definition)
        Result.from_handler_output(handler.call(context))
      rescue Exception => e # rubocop:disable Lint/RescueException -- even `exit` in a handler must not end its thread
        Result.from_exception(e)
      end

      private

      def process(event, event_id, step_uuid, started, answer)
        begin
          context = Types::StepContext.new(event)
        rescue StandardError => e
          outcome = Result.error(message: "malformed step event: #{describe(e, with_class: false)}", error_type: "event_error")
          return complete(event_id, step_uuid, outcome, started, answer)
        end
        outcome = invoke(context)
        return if outcome.checkpoint? && checkpoint(event_id, context, outcome, answer)

        outcome = Result.error(message: "checkpoint refused", error_type: "checkpoint_error", retryable: true) if outcome.checkpoint?
        complete(event_id, context.step_uuid, outcome, started, answer)
      end

      # True when the checkpoint was taken (or the event is gone); false to fail the step instead.
      def checkpoint(event_id, context, outcome, answer)
        json = write_json(outcome.to_checkpoint_data(step_uuid: context.step_uuid))
        if json.is_a?(Exception)
          log(:error, "checkpoint is not JSON: #{describe(json, with_class: false)}") { { "step_uuid" => context.step_uuid } }
          return false
        end
        answer.sent = true
        TaskerCore::FFI.checkpoint_yield_step_event_json(event_id, json)
        true
      rescue Errors::FFIError => e
        # Unknown (timed out) or refused (the worker gave the step its error result): nothing left to do.
        return warn_unaccepted("checkpoint", e, context.step_uuid) if [TaskerCore::FFI::ERR_UNKNOWN_EVENT,
                                                                        TaskerCore::FFI::ERR_REFUSED].include?(e.status)

        answer.sent = false # not taken: the step's failure follows
        log(:error, "checkpoint refused: #{e.message}") { { "step_uuid" => context.step_uuid } }
        false
      end

      def complete(event_id, step_uuid, outcome, started, answer, fallback: true)
        elapsed = ((monotonic - started) * 1000).round
        document = Result.execution_result(outcome, step_uuid: step_uuid, execution_time_ms: elapsed, worker_id: @worker_id)
        json = write_json(document)
        if json.is_a?(Exception)
          # The handler's result cannot be written (nested too deeply, NaN, cyclic, bad encoding, a
          # value whose #to_s raises): the step fails for good.
          return fallback && complete(event_id, step_uuid, Result.error(message: "the handler's result is not JSON: #{describe(json, with_class: false)}",
                                                                        error_type: "handler_error"), started, answer, fallback: false)
        end
        answer.sent = true
        TaskerCore::FFI.complete_step_event_json(event_id, json)
      rescue Errors::FFIError => e
        # Refused (ERR_REFUSED) results already got their error result from the worker.
        if fallback && e.status == TaskerCore::FFI::ERR_INVALID_ARGUMENT
          answer.sent = false
          complete(event_id, step_uuid, Result.error(message: "the worker refused the handler's result: #{e.message}",
                                                     error_type: "handler_error"), started, answer, fallback: false)
        else
          warn_unaccepted("result", e, step_uuid)
        end
      end

      # The JSON text of `document`, or the exception that writing it raised (any: a result's
      # values are the handler's objects).
      def write_json(document)
        JSON.generate(document, max_nesting: TaskerCore::FFI::JSON_MAX_NESTING)
      rescue Exception => e # rubocop:disable Lint/RescueException
        e
      end

      def warn_unaccepted(what, error, step_uuid)
        log(:warn, "#{what} not accepted: #{error.message}") { { "step_uuid" => step_uuid } }
        true
      end

      # "Class: message" of any exception, without raising (its #message may raise).
      def describe(error, with_class: true)
        failed = Result.from_exception(error)
        with_class ? "#{failed.metadata['exception_class']}: #{failed.message}" : failed.message
      end

      def log(level, message)
        fields = guarded { yield } if block_given?
        guarded { @logger.public_send(level, message, fields) }
      end

      def guarded
        yield
      rescue StandardError
        nil
      end

      def monotonic = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
