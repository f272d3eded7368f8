# frozen_string_literal: true

require "ffi"

module TaskerCore
  # The raw C ABI of libTaskerWorkerFFI.so (bindings/c/include/tasker_worker.h) through ruby-ffi.
  # Use TaskerCore::FFI, which decodes statuses, strings and JSON; this module only attaches.
  #
  # Every call that may wait (bootstrap, stop, polls with a timeout, completions, client calls) is
  # attached with `blocking: true`: Ruby releases the GVL during it, so other Ruby threads run.
  module Native
    extend ::FFI::Library

    LIBRARY_NAME = "libTaskerWorkerFFI.so"
    # The checkout this gem lives in (bindings/ruby/lib/tasker_core → the repository root).
    CHECKOUT = File.expand_path("../../../..", __dir__)

    # The library to load: $TASKER_WORKER_LIBRARY, else the checkout's .build/debug or .build/release.
    #
    # @raise [LoadError] naming both places when neither has it
    def self.library_path
      explicit = ENV.fetch("TASKER_WORKER_LIBRARY", "")
      unless explicit.empty?
        return explicit if File.file?(explicit)

        raise LoadError, "TASKER_WORKER_LIBRARY=#{explicit} is not a file (expected #{LIBRARY_NAME})"
      end
      candidates = %w[debug release].map { |c| File.join(CHECKOUT, ".build", c, LIBRARY_NAME) }
      candidates.find { |path| File.file?(path) } ||
        raise(LoadError, "#{LIBRARY_NAME} not found: set TASKER_WORKER_LIBRARY to its path, or build it into " \
                         "#{candidates.join(' or ')} (`swift build --product TaskerWorkerFFI`)")
    end

    LOADED_FROM = library_path
    begin
      ffi_lib LOADED_FROM
    rescue LoadError => e
      raise LoadError, "#{LOADED_FROM} could not be loaded as #{LIBRARY_NAME}: #{e.message}"
    end

    # The core of the ABI: without any of these the SDK cannot work, so a library lacking one (not
    # libTaskerWorkerFFI, or too old) is a LoadError naming the missing functions and the path.
    # Everything that may wait (on the worker, a lock, the log's pipe) releases the GVL.
    CORE_FUNCTIONS = {
      tasker_last_error: [[], :pointer, false],
      tasker_string_free: [[:pointer], :void, false],
      tasker_version: [[], :string, false],
      tasker_worker_bootstrap: [%i[string pointer], :int, true],
      tasker_worker_stop: [[:pointer], :int, true],
      tasker_worker_begin_shutdown: [[:pointer], :int, true],
      tasker_worker_status: [[:pointer], :int, true],
      tasker_worker_is_running: [[:pointer], :int, true],
      tasker_poll_step_event: [%i[int32 pointer], :int, true],
      tasker_complete_step_event: [%i[string string], :int, true],
      tasker_checkpoint_yield_step_event: [%i[string string], :int, true],
      tasker_ffi_dispatch_metrics: [[:pointer], :int, true],
      tasker_check_starvation_warnings: [[:pointer], :int, true],
      tasker_cleanup_timeouts: [[:pointer], :int, true],
      tasker_poll_in_process_event: [%i[int32 pointer], :int, true],
      tasker_health: [[:pointer], :int, true],
      tasker_metrics: [[:pointer], :int, true],
      tasker_worker_config: [[:pointer], :int, true],
      tasker_log: [%i[int32 string string], :int, true]
    }.freeze

    missing_core = CORE_FUNCTIONS.each_with_object([]) do |(name, (params, returns, blocking)), missing|
      attach_function name, params, returns, blocking: blocking
    rescue ::FFI::NotFoundError
      missing << name
    end
    unless missing_core.empty?
      raise LoadError, "#{LOADED_FROM} is not a usable #{LIBRARY_NAME}: it lacks #{missing_core.join(', ')} " \
                       "(build it from this checkout: `swift build --product TaskerWorkerFFI`)"
    end

    # The orchestration client (newer libraries only): attached when present, so the SDK loads
    # with a library that lacks them; TaskerCore::Client raises a clear error on use instead.
    CLIENT_FUNCTIONS = {
      tasker_client_health_check: [:pointer],
      tasker_client_create_task: %i[string pointer],
      tasker_client_get_task: %i[string pointer],
      tasker_client_list_tasks: %i[int32 int32 string string pointer],
      tasker_client_cancel_task: %i[string pointer],
      tasker_client_list_task_steps: %i[string pointer],
      tasker_client_get_step: %i[string string pointer],
      tasker_client_get_step_audit_history: %i[string string pointer]
    }.freeze

    MISSING_CLIENT_FUNCTIONS = CLIENT_FUNCTIONS.each_with_object([]) do |(name, params), missing|
      attach_function name, params, :int, blocking: true
    rescue ::FFI::NotFoundError
      missing << name
    end.freeze

    # Whether the loaded library has `function` (one of CLIENT_FUNCTIONS).
    def self.client_function?(function) = CLIENT_FUNCTIONS.key?(function) && !MISSING_CLIENT_FUNCTIONS.include?(function)
  end
end
