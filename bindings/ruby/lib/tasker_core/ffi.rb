# frozen_string_literal: true

require "json"
require_relative "native"
require_relative "errors"

module TaskerCore
  # The worker's C ABI in Ruby terms: hashes in and out, errors as TaskerCore::Errors::FFIError
  # (status and the library's message). Names follow upstream tasker-rb's `TaskerCore::FFI`.
  module FFI
    OK = 0
    ERR_INVALID_ARGUMENT = 1
    ERR_NOT_RUNNING = 2
    ERR_ALREADY_RUNNING = 3
    ERR_UNKNOWN_EVENT = 4
    ERR_BOOTSTRAP = 5
    ERR_REFUSED = 6
    ERR_CLIENT = 7
    ERR_INTERNAL = 99

    LOG_LEVELS = { trace: 0, debug: 1, info: 2, warn: 3, error: 4 }.freeze

    # Nesting allowed in JSON exchanged with the worker: its limit (128) plus its envelopes. Ruby's
    # default (100) would refuse legitimate events; a deeper result raises JSON::NestingError,
    # which fails its step instead of the poll thread.
    JSON_MAX_NESTING = 160

    module_function

    # The library's version string, e.g. "0.1.0".
    def library_version = Native.tasker_version

    # The path the library was loaded from.
    def library_path = Native::LOADED_FROM

    # Starts the embedded worker (keys of tasker_worker_bootstrap: environment, config_path,
    # database_url, template_path, web_bind_address, grpc_bind_address, log_level, log_format).
    def bootstrap_worker(config = {}) = call_json(:tasker_worker_bootstrap, JSON.generate(config || {}))

    # Graceful stop, waited for: {"status" => "stopped" | "not_running"}.
    def stop_worker = call_json(:tasker_worker_stop)

    # Begins the graceful shutdown and returns at once.
    def transition_to_graceful_shutdown = call_json(:tasker_worker_begin_shutdown)

    def worker_status = call_json(:tasker_worker_status)

    def worker_running?
      out = ::FFI::MemoryPointer.new(:int32)
      check(Native.tasker_worker_is_running(out), :tasker_worker_is_running)
      out.read_int32 == 1
    end

    # The next step event (a Hash), or nil when none came within `timeout_ms`.
    def poll_step_events(timeout_ms = 0) = call_json(:tasker_poll_step_event, Integer(timeout_ms))

    # Completes a polled event with a StepExecutionResult hash.
    #
    # @raise [JSON::GeneratorError, JSON::NestingError] the result is not writable JSON
    # @raise [Errors::FFIError] refused (status says why: unknown event, invalid argument, ...)
    def complete_step_event(event_id, result) = complete_step_event_json(event_id, JSON.generate(result, max_nesting: JSON_MAX_NESTING))

    # complete_step_event with the result already written as JSON text.
    def complete_step_event_json(event_id, json)
      check(Native.tasker_complete_step_event(event_id.to_s, json.to_s), :tasker_complete_step_event)
      true
    end

    # Persists a checkpoint ({step_uuid, cursor, items_processed, accumulated_results}); the step
    # comes back as a new event carrying it in workflow_step.checkpoint.
    def checkpoint_yield_step_event(event_id, checkpoint)
      checkpoint_yield_step_event_json(event_id, JSON.generate(checkpoint, max_nesting: JSON_MAX_NESTING))
    end

    # checkpoint_yield_step_event with the checkpoint already written as JSON text.
    def checkpoint_yield_step_event_json(event_id, json)
      check(Native.tasker_checkpoint_yield_step_event(event_id.to_s, json.to_s), :tasker_checkpoint_yield_step_event)
      true
    end

    def get_ffi_dispatch_metrics = call_json(:tasker_ffi_dispatch_metrics)
    def check_starvation_warnings = call_int(:tasker_check_starvation_warnings, :int32)
    def cleanup_timeouts = call_int(:tasker_cleanup_timeouts, :int64)

    # The next in-process (fast/broadcast) domain event, or nil.
    def poll_in_process_events(timeout_ms = 0) = call_json(:tasker_poll_in_process_event, Integer(timeout_ms))

    def health_detailed = call_json(:tasker_health)
    def metrics_worker = call_json(:tasker_metrics)
    def config_runtime = call_json(:tasker_worker_config)

    # Writes a line into the worker's log stream (fields: string values).
    def log(level, message, fields = nil)
      encoded = fields && JSON.generate(fields.to_h { |k, v| [k.to_s, v.to_s] })
      check(Native.tasker_log(LOG_LEVELS.fetch(level.to_sym), message.to_s, encoded), :tasker_log)
    end

    def log_error(message, fields = nil) = log(:error, message, fields)
    def log_warn(message, fields = nil) = log(:warn, message, fields)
    def log_info(message, fields = nil) = log(:info, message, fields)
    def log_debug(message, fields = nil) = log(:debug, message, fields)
    def log_trace(message, fields = nil) = log(:trace, message, fields)

    # Calls `function(args..., char **out)`; returns the decoded JSON (nil for a NULL output).
    def call_json(function, *args)
      out = ::FFI::MemoryPointer.new(:pointer)
      check(Native.public_send(function, *args, out), function)
      text = take_string(out.read_pointer)
      text && JSON.parse(text, max_nesting: JSON_MAX_NESTING)
    end

    def call_int(function, type)
      out = ::FFI::MemoryPointer.new(type)
      check(Native.public_send(function, out), function)
      type == :int64 ? out.read_int64 : out.read_int32
    end

    # Copies and frees a library-allocated string.
    def take_string(pointer)
      return nil if pointer.null?

      pointer.read_string.force_encoding(Encoding::UTF_8)
    ensure
      Native.tasker_string_free(pointer) unless pointer.null?
    end

    def check(status, function)
      return if status == OK

      message = take_string(Native.tasker_last_error) || "(no message)"
      raise (status == ERR_CLIENT ? Errors::ClientError : Errors::FFIError).new(status, function, message)
    end
  end
end
