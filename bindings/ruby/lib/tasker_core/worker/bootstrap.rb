# frozen_string_literal: true

require_relative "../ffi"
require_relative "../logger"
require_relative "../registry/handler_registry"
require_relative "step_executor"
require_relative "event_poller"
require_relative "in_process_domain_event_poller"

module TaskerCore
  module Worker
    # The embedded Swift worker plus the Ruby threads that run its steps' Ruby handlers. Steps
    # whose callable has a Swift handler (the built-ins tasker.echo, tasker.noop, ...) run in the
    # library; every other step comes to the registry's handlers here.
    #
    #   worker = TaskerCore::Worker::Bootstrap.new(concurrency: 4)
    #   worker.run { |started| puts "serving as #{started['worker_id']}" }   # until SIGTERM/SIGINT
    #
    # One embedded worker per process.
    class Bootstrap
      attr_reader :config, :registry, :poller, :domain_events, :bootstrap_result

      # @param config [Hash] tasker_worker_bootstrap's keys (environment, config_path,
      #   database_url, template_path, web_bind_address, grpc_bind_address, log_level, log_format);
      #   unset keys come from the environment as for the tasker-worker daemon
      # @param concurrency [Integer] Ruby handlers running at once
      # @param poll_timeout_ms [Integer] how long one poll waits before checking for a stop
      # @param abandon_after [Numeric, nil] seconds after which a handler that has not returned
      #   gives its slot to a new thread (see EventPoller); keep it above the worker's
      #   ffi_dispatch completion_timeout_ms; nil: never
      # @param stop_grace [Numeric] seconds #shutdown! waits, once the worker stopped, for handler
      #   threads and domain event subscribers still running (stuck ones are left behind)
      def initialize(config: {}, concurrency: 4, poll_timeout_ms: 200, registry: Registry::HandlerRegistry.instance,
                     logger: TaskerCore::Logger.new("ruby_worker"), abandon_after: 300, stop_grace: 10)
        @config = config.to_h.transform_keys(&:to_s)
        @registry = registry
        @logger = logger
        @executor = StepExecutor.new(registry: registry)
        @poller = EventPoller.new(executor: @executor, concurrency: concurrency, poll_timeout_ms: poll_timeout_ms,
                                  abandon_after: abandon_after, stop_grace: stop_grace)
        @domain_events = InProcessDomainEventPoller.new(poll_timeout_ms: poll_timeout_ms, stop_grace: stop_grace)
        @shutdown_hooks = []
        @wake_reader, @wake_writer = IO.pipe
        @state = :new
      end

      # Bootstraps the worker (returns once it serves) and starts the poll threads.
      #
      # @return [Hash] the bootstrap result (worker_id, namespaces, web_address, ...)
      # @raise [Errors::FFIError] bootstrap failed (the message says what)
      def start!
        raise Errors::ConfigurationError, "this worker was already started (#{@state})" unless @state == :new

        @bootstrap_result = TaskerCore::FFI.bootstrap_worker(@config)
        @executor.worker_id = @bootstrap_result["worker_id"]
        @poller.start!
        @domain_events.start! if @domain_events.subscriber_count.positive?
        @state = :running
        @logger.info("Ruby handlers attached", "handlers" => @registry.registered_handlers.join(","),
                                               "concurrency" => @poller.concurrency.to_s)
        @bootstrap_result
      end

      def running? = @state == :running && TaskerCore::FFI.worker_running?
      def worker_id = @bootstrap_result&.fetch("worker_id", nil)
      def status = TaskerCore::FFI.worker_status

      # Adds a block run after #shutdown!.
      def on_shutdown(&block) = @shutdown_hooks << block

      # Calls the block for in-process domain events matching `pattern` (see
      # InProcessDomainEventPoller#subscribe); starts their poller when the worker runs.
      def subscribe(pattern, &block)
        @domain_events.subscribe(pattern, &block)
        @domain_events.start! if @state == :running
        self
      end

      # Registers a DomainEvents::BaseSubscriber (class or instance) for its patterns.
      def register_subscriber(subscriber)
        @domain_events.register(subscriber)
        @domain_events.start! if @state == :running
        self
      end

      # Graceful stop: intake stops, the steps already claimed (Swift and Ruby) finish and their
      # results are stored, then the worker stops and the threads end. Idempotent.
      def shutdown!
        return unless @state == :running

        @state = :stopping
        @logger.info("stopping: draining Ruby handlers")
        begin
          TaskerCore::FFI.transition_to_graceful_shutdown
        rescue Errors::FFIError
          nil # not running any more: stop_worker says so
        end
        begin
          TaskerCore::FFI.stop_worker # waits for the drain while the poll threads keep serving
        ensure
          @poller.stop!
          @domain_events.stop!
          @state = :stopped
        end
        @shutdown_hooks.each(&:call)
      end

      # Asks #run to stop (what SIGTERM and SIGINT do); safe from any thread and from trap context.
      def request_stop!
        @wake_writer.write_nonblock(".")
      rescue IO::WaitWritable, IOError
        nil
      end

      # #start!, yields the bootstrap result, waits for SIGTERM/SIGINT (or #request_stop!), then
      # #shutdown!. Restores the previous signal handlers.
      def run(install_signal_handlers: true)
        previous = install_signal_handlers ? trap_signals : {}
        started = start!
        yield started if block_given?
        wait_for_stop
        shutdown!
      ensure
        shutdown! if @state == :running
        previous&.each { |signal, handler| Signal.trap(signal, handler || "DEFAULT") }
      end

      private

      def trap_signals = %w[TERM INT].to_h { |signal| [signal, Signal.trap(signal) { request_stop! }] }

      def wait_for_stop
        loop do
          ready, = IO.select([@wake_reader], nil, nil, 1.0)
          return if ready
          # The worker stopped on its own (or the poller died): nothing left to wait for.
          return unless @poller.active?
        end
      end
    end
  end
end
