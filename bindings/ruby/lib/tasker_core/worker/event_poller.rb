# frozen_string_literal: true

require_relative "../ffi"
require_relative "../logger"

module TaskerCore
  module Worker
    # One poller thread takes step events from the worker (tasker_poll_step_event with a timeout;
    # the call releases the GVL) and hands them to `concurrency` handler threads. It polls only
    # while a handler thread is free, so no event waits in Ruby (its completion timeout running)
    # while every handler is busy. Each event goes to exactly one StepExecutor#execute, which
    # answers it once.
    class EventPoller
      # Polls between two starvation checks (upstream's cadence).
      STARVATION_CHECK_EVERY = 100

      attr_reader :concurrency, :poll_timeout_ms, :polls

      def initialize(executor:, concurrency: 4, poll_timeout_ms: 200, logger: TaskerCore::Logger.new("ruby_event_poller"))
        raise ArgumentError, "concurrency must be >= 1, got #{concurrency}" unless concurrency.is_a?(Integer) && concurrency >= 1

        @executor = executor
        @concurrency = concurrency
        @poll_timeout_ms = Integer(poll_timeout_ms)
        @logger = logger
        @lock = Mutex.new
        @freed = ConditionVariable.new
        @free = concurrency
        @stopping = false
        @polls = 0
        @threads = []
      end

      # Starts the poller and handler threads.
      def start!
        @lock.synchronize do
          raise ArgumentError, "the event poller is already started" unless @threads.empty?

          @stopping = false
          @queue = Queue.new
          @handlers = Array.new(concurrency) { |i| thread("tasker-handler-#{i}") { handler_loop } }
          @poller = thread("tasker-poller") { poll_loop }
          @threads = [@poller, *@handlers]
        end
        self
      end

      # True while the poller thread runs.
      def active? = @poller&.alive? || false

      # Stops polling; handlers finish the events they have (and any already handed over), then
      # the threads end. Call it after the worker stopped (the poller also ends by itself then).
      def stop!
        @lock.synchronize do
          @stopping = true
          @freed.broadcast
        end
        @threads.each(&:join)
        @threads = []
      end

      # The worker's FFI dispatch metrics.
      def ffi_dispatch_metrics = TaskerCore::FFI.get_ffi_dispatch_metrics

      private

      def thread(name, &block)
        Thread.new do
          Thread.current.name = name
          Thread.current.report_on_exception = true
          block.call
        end
      end

      def poll_loop
        while take_slot
          event = poll_once
          event ? @queue << event : give_slot
        end
      ensure
        @queue.close
      end

      # An event, or nil (none came, a bad one, or the worker no longer runs: then polling stops).
      def poll_once
        @polls += 1
        check_starvation if (@polls % STARVATION_CHECK_EVERY).zero?
        TaskerCore::FFI.poll_step_events(poll_timeout_ms)
      rescue Errors::FFIError => e
        return stop_polling if e.status == TaskerCore::FFI::ERR_NOT_RUNNING

        @logger.error("poll failed: #{e.message}")
        pause_after_error
      rescue StandardError => e
        # An event that cannot be read (not JSON, nested too deep): the channel's completion timeout
        # settles it; polling goes on.
        @logger.error("poll failed: #{e.class}: #{e.message}")
        nil
      end

      def stop_polling
        @lock.synchronize { @stopping = true }
        nil
      end

      def pause_after_error
        @lock.synchronize { @freed.wait(@lock, 0.1) unless @stopping }
        nil
      end

      def handler_loop
        while (event = @queue.pop)
          begin
            @executor.execute(event)
          ensure
            give_slot
          end
        end
      end

      # Waits for a free handler thread; false once stopping.
      def take_slot
        @lock.synchronize do
          @freed.wait(@lock) while @free.zero? && !@stopping
          return false if @stopping

          @free -= 1
          true
        end
      end

      def give_slot
        @lock.synchronize do
          @free += 1
          @freed.signal
        end
      end

      def check_starvation
        TaskerCore::FFI.check_starvation_warnings
      rescue StandardError
        nil
      end
    end
  end
end
