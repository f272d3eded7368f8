# frozen_string_literal: true

# A Ruby binding of the Swift Tasker worker's C ABI (bindings/c/include/tasker_worker.h) through
# ruby-ffi (Debian: `apt-get install ruby ruby-ffi`). The whole worker runs inside the Ruby
# process; steps whose callable has no Swift handler come to the Ruby handlers registered here.
#
#   require "tasker_worker"
#   worker = TaskerWorker::Worker.new
#   worker.handler("shop.greet") { |step| TaskerWorker.success("greeting" => "Hello, #{step.input('name')}") }
#   worker.run   # until SIGTERM / SIGINT, then drains and stops
#
# Library lookup: $TASKER_WORKER_LIBRARY, else the repository's .build/debug or .build/release.

require "ffi"
require "json"

module TaskerWorker
  LIBRARY_NAME = "libTaskerWorkerFFI.so"

  # A C ABI call returned a status other than TASKER_OK.
  class Error < StandardError
    attr_reader :status, :function

    def initialize(status, function, message)
      @status = status
      @function = function
      super("#{function}: status #{status}: #{message}")
    end
  end

  OK = 0
  ERR_INVALID_ARGUMENT = 1
  ERR_NOT_RUNNING = 2
  ERR_UNKNOWN_EVENT = 4
  LOG_LEVELS = { trace: 0, debug: 1, info: 2, warn: 3, error: 4 }.freeze

  def self.library_path
    explicit = ENV["TASKER_WORKER_LIBRARY"]
    return explicit if explicit && !explicit.empty?

    root = File.expand_path("../../..", __dir__)
    %w[debug release].map { |c| File.join(root, ".build", c, LIBRARY_NAME) }.find { |p| File.file?(p) } ||
      raise(LoadError, "#{LIBRARY_NAME} not found: set TASKER_WORKER_LIBRARY or `swift build --product TaskerWorkerFFI`")
  end

  # The header's functions. `blocking: true` releases the GVL during the call, so several Ruby
  # threads can poll and complete at once.
  module Native
    extend FFI::Library
    ffi_lib TaskerWorker.library_path

    attach_function :tasker_last_error, [], :pointer
    attach_function :tasker_string_free, [:pointer], :void
    attach_function :tasker_version, [], :string
    attach_function :tasker_worker_bootstrap, %i[string pointer], :int, blocking: true
    attach_function :tasker_worker_stop, [:pointer], :int, blocking: true
    attach_function :tasker_worker_is_running, [:pointer], :int
    attach_function :tasker_poll_step_event, %i[int32 pointer], :int, blocking: true
    attach_function :tasker_complete_step_event, %i[string string], :int, blocking: true
    attach_function :tasker_checkpoint_yield_step_event, %i[string string], :int, blocking: true
    attach_function :tasker_log, %i[int32 string string], :int
  end

  # Copies and frees a library-allocated string.
  def self.take_string(pointer)
    return nil if pointer.null?

    pointer.read_string.force_encoding(Encoding::UTF_8)
  ensure
    Native.tasker_string_free(pointer) unless pointer.null?
  end

  def self.check(status, function)
    return if status == OK

    raise Error.new(status, function, take_string(Native.tasker_last_error) || "(no message)")
  end

  # Calls `function(args..., char **out)` and returns the decoded JSON (nil when NULL).
  def self.call_json(function, *args)
    out = FFI::MemoryPointer.new(:pointer)
    check(Native.public_send(function, *args, out), function)
    text = take_string(out.read_pointer)
    # The worker sends nothing nested past 128 levels (plus its own envelopes); Ruby's default
    # max_nesting of 100 would refuse legitimate events.
    text && JSON.parse(text, max_nesting: JSON_MAX_NESTING)
  end

  # Nesting allowed in the JSON exchanged with the worker: its limit (128) plus its envelopes. A
  # deeper result raises JSON::NestingError, which fails the step instead of the poll thread.
  JSON_MAX_NESTING = 160

  def self.bootstrap(config = {}) = call_json(:tasker_worker_bootstrap, JSON.generate(config))
  def self.stop = call_json(:tasker_worker_stop)
  def self.poll(timeout_ms) = call_json(:tasker_poll_step_event, timeout_ms)

  def self.complete(event_id, result)
    check(Native.tasker_complete_step_event(event_id, JSON.generate(result, max_nesting: JSON_MAX_NESTING)), :tasker_complete_step_event)
  end

  def self.log(level, message, fields = nil)
    check(Native.tasker_log(LOG_LEVELS.fetch(level), message, fields && JSON.generate(fields.transform_values(&:to_s))), :tasker_log)
  end

  # What a handler returns.
  Result = Struct.new(:success, :result, :message, :error_type, :retryable, keyword_init: true) do
    def to_execution_result(step_uuid, elapsed_ms)
      metadata = { "execution_time_ms" => elapsed_ms, "retryable" => success ? false : retryable, "custom" => {} }
      if success
        { "step_uuid" => step_uuid, "success" => true, "status" => "completed", "result" => result, "metadata" => metadata }
      else
        metadata["error_type"] = error_type
        { "step_uuid" => step_uuid, "success" => false, "status" => "failed", "result" => {}, "metadata" => metadata,
          "error" => { "message" => message, "error_type" => error_type, "retryable" => retryable } }
      end
    end
  end

  def self.success(result = {}) = Result.new(success: true, result: result)

  def self.failure(message, retryable: true, error_type: "handler_error")
    Result.new(success: false, message: message, error_type: error_type, retryable: retryable)
  end

  # A polled step: the task's context, the step's config and its parents' results.
  class Step
    attr_reader :event

    def initialize(event)
      @event = event
      @sequence = event.fetch("task_sequence_step", {})
    end

    def step_uuid = event["step_uuid"]
    def name = @sequence.dig("workflow_step", "name")
    def handler_name = @sequence.dig("step_definition", "handler", "callable")

    def input(key)
      task = @sequence.fetch("task", {})
      (task["task"] || task).fetch("context", {})[key]
    end

    def config(key) = (@sequence.dig("step_definition", "handler", "initialization") || {})[key]

    def dependency(step_name)
      stored = @sequence.fetch("dependency_results", {})[step_name]
      stored.is_a?(Hash) && stored.key?("result") ? stored["result"] : stored
    end
  end

  # The embedded worker plus Ruby threads running the registered handlers.
  class Worker
    def initialize(config = {}, threads: 2, poll_timeout_ms: 200)
      @config = config
      @thread_count = threads
      @poll_timeout_ms = poll_timeout_ms
      @handlers = {}
      @stopping = false
    end

    # Registers the block for steps whose template callable is `callable`.
    def handler(callable, &block)
      @handlers[callable] = block
    end

    # Bootstraps, serves until SIGTERM/SIGINT, then drains (running handlers finish, results are
    # stored) and stops. Yields the bootstrap result once the worker serves.
    def run
      stop_requested = false
      previous = %w[TERM INT].to_h { |signal| [signal, Signal.trap(signal) { stop_requested = true }] }
      started = TaskerWorker.bootstrap(@config)
      threads = Array.new(@thread_count) { Thread.new { poll_loop } }
      yield started if block_given?
      sleep 0.2 until stop_requested
      TaskerWorker.log(:info, "stopping: draining Ruby handlers")
      TaskerWorker.stop
      @stopping = true
      threads.each(&:join)
    ensure
      previous&.each { |signal, handler| Signal.trap(signal, handler || "DEFAULT") }
    end

    private

    def poll_loop
      until @stopping
        begin
          event = TaskerWorker.poll(@poll_timeout_ms)
        rescue Error => e
          return if e.status == ERR_NOT_RUNNING

          raise
        rescue StandardError => e
          # An event that cannot be read (e.g. nested too deep): the worker's per-event timeout
          # settles it; the poll thread lives on.
          TaskerWorker.log(:error, "poll failed: #{e.class}: #{e.message}")
          next
        end
        process(event) if event
      end
    end

    def process(event)
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      step = Step.new(event)
      outcome = invoke(step)
      complete(event, step, outcome, started)
    rescue StandardError => e
      # Nothing ends the poll thread: an unexpected error becomes the step's retryable error.
      complete(event, step, TaskerWorker.failure("#{e.class}: #{e.message}"), started, fallback: false) if step
    end

    def complete(event, step, outcome, started, fallback: true)
      elapsed = ((Process.clock_gettime(Process::CLOCK_MONOTONIC) - started) * 1000).to_i
      TaskerWorker.complete(event["event_id"], outcome.to_execution_result(step.step_uuid, elapsed))
    rescue JSON::NestingError, JSON::GeneratorError => e
      # The handler's result cannot be written (nested too deeply, not JSON): the step fails for good.
      if fallback
        complete(event, step, TaskerWorker.failure("the handler's result is not JSON: #{e.message}", retryable: false), started,
                 fallback: false)
      end
    rescue Error => e
      if fallback && e.status == ERR_INVALID_ARGUMENT
        complete(event, step, TaskerWorker.failure("the worker refused the handler's result: #{e.message}", retryable: false),
                 started, fallback: false)
      else
        TaskerWorker.log(:warn, "result not accepted: #{e.message}", { "step_uuid" => step.step_uuid })
      end
    end

    def invoke(step)
      block = @handlers[step.handler_name]
      return TaskerWorker.failure("no Ruby handler for #{step.handler_name}", retryable: false, error_type: "handler_not_found") unless block

      returned = block.call(step)
      returned.is_a?(Result) ? returned : TaskerWorker.success(returned || {})
    rescue StandardError => e
      TaskerWorker.failure("#{e.class}: #{e.message}")
    end
  end
end
