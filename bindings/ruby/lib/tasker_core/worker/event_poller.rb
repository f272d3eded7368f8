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
    #
    # A handler that never returns does not hold its slot forever: after `abandon_after` seconds
    # (past the worker's completion timeout, which has then given the step its handler_timeout
    # result) its thread is abandoned, its slot freed and a new handler thread started; the stuck
    # thread ends after its step if it ever returns. A handler thread that dies (Thread.exit in a
    # handler) is replaced too. #stop! waits at most `stop_grace` seconds for handler threads.
    class EventPoller
      # Polls between two starvation checks (upstream's cadence).
      STARVATION_CHECK_EVERY = 100

      # One handler thread and the step it runs (busy_since: monotonic start, nil when idle).
      Slot = Struct.new(:thread, :busy_since, :abandoned)

      attr_reader :concurrency, :poll_timeout_ms, :polls, :abandon_after, :stop_grace

      # @param abandon_after [Numeric, nil] seconds a handler may run before its slot is given to a
      #   new thread (nil: never); keep it above the worker's ffi_dispatch completion_timeout_ms
      # @param stop_grace [Numeric] seconds #stop! waits for the handler threads
      def initialize(executor:, concurrency: 4, poll_timeout_ms: 200, abandon_after: 300, stop_grace: 10,
                     logger: TaskerCore::Logger.new("ruby_event_poller"))
        raise ArgumentError, "concurrency must be >= 1, got #{concurrency}" unless concurrency.is_a?(Integer) && concurrency >= 1
        raise ArgumentError, "abandon_after must be > 0 or nil, got #{abandon_after}" if abandon_after && !abandon_after.positive?

        @executor = executor
        @concurrency = concurrency
        @poll_timeout_ms = Integer(poll_timeout_ms)
        @abandon_after = abandon_after
        @stop_grace = stop_grace
        @logger = logger
        @lock = Mutex.new
        @freed = ConditionVariable.new
        @free = concurrency
        @stopping = false
        @polls = 0
        @slots = []
        @poller = nil
      end

      # Starts the poller and handler threads.
      def start!
        @lock.synchronize do
          raise ArgumentError, "the event poller is already started" if @poller

          @stopping = false
          @queue = Queue.new
          concurrency.times { start_slot }
          @poller = thread("tasker-poller") { poll_loop }
        end
        self
      end

      # True while the poller thread runs.
      def active? = @poller&.alive? || false

      # Handler threads abandoned so far (stuck past abandon_after, or still running at #stop!).
      def abandoned_count = @lock.synchronize { @abandoned_total || 0 }

      # Stops polling; handlers finish the events they have (and any already handed over), then
      # the threads end. Call it after the worker stopped (the poller also ends by itself then).
      # Handler threads still running after stop_grace seconds (stuck handlers) are left behind.
      def stop!
        @lock.synchronize do
          @stopping = true
          @freed.broadcast
        end
        @poller&.join
        deadline = monotonic + stop_grace
        slots = @lock.synchronize { @slots.dup }
        stuck = slots.reject { |slot| slot.thread.join([deadline - monotonic, 0].max) }
        unless stuck.empty?
          @lock.synchronize { @abandoned_total = (@abandoned_total || 0) + stuck.size }
          log_warn("stopped with #{stuck.size} Ruby handler(s) still running (left behind): " \
                   "#{stuck.map { |s| s.thread.name }.join(', ')}")
        end
        @lock.synchronize { @slots = [] }
        @poller = nil
      end

      # The worker's FFI dispatch metrics.
      def ffi_dispatch_metrics = TaskerCore::FFI.get_ffi_dispatch_metrics

      private

      # A new handler thread with its slot (under @lock).
      def start_slot
        slot = Slot.new(nil, nil, false)
        @slots << slot
        @started = (@started || 0) + 1
        slot.thread = thread("tasker-handler-#{@started}") { handler_loop(slot) }
      end

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

        log_error("poll failed: #{e.message}")
        pause_after_error
      rescue StandardError => e
        # An event that cannot be read (not JSON, nested too deep): the channel's completion timeout
        # settles it; polling goes on.
        log_error("poll failed: #{e.class}: #{e.message}")
        nil
      end

      def stop_polling
        @lock.synchronize { @stopping = true }
        nil
      end

      def pause_after_error
        deadline = monotonic + 0.1
        @lock.synchronize { @freed.wait(@lock, deadline - monotonic) while !@stopping && monotonic < deadline }
        nil
      end

      # Runs events until the queue closes. Every exit path settles the slot: returned to the pool
      # after each event, and a thread that ends early (killed, Thread.exit in a handler) is
      # replaced unless the poller is stopping or the slot was abandoned (and replaced) already.
      def handler_loop(slot)
        while (event = @queue.pop)
          @lock.synchronize { slot.busy_since = monotonic }
          @executor.execute(event)
          break if finish_event(slot) == :abandoned
        end
      ensure
        replace_dead(slot) if slot.busy_since || !(@queue.closed? && @queue.empty?)
      end

      # A slot taken for a poll that brought no event goes back to the pool.
      def give_slot
        @lock.synchronize do
          @free += 1
          @freed.signal
        end
      end

      # After an event: the slot goes back to the pool, unless it was abandoned meanwhile.
      def finish_event(slot)
        @lock.synchronize do
          slot.busy_since = nil
          return :abandoned if slot.abandoned

          @free += 1
          @freed.signal
          :kept
        end
      end

      # The thread of `slot` is ending while it held an event or the queue still runs.
      def replace_dead(slot)
        @lock.synchronize do
          @slots.delete(slot)
          return if slot.abandoned

          if slot.busy_since
            slot.busy_since = nil
            @free += 1
            @freed.signal
          end
          start_slot unless @stopping || @queue.closed?
        end
      end

      # Waits for a free handler thread; false once stopping. While every slot is busy, a slot
      # busy for longer than abandon_after is abandoned and replaced.
      def take_slot
        @lock.synchronize do
          while @free.zero? && !@stopping
            abandon_stuck_slots
            @freed.wait(@lock, abandon_after ? [abandon_after / 4.0, 1.0].min : nil)
          end
          return false if @stopping

          @free -= 1
          true
        end
      end

      # (Under @lock.)
      def abandon_stuck_slots
        return unless abandon_after

        now = monotonic
        @slots.select { |s| !s.abandoned && s.busy_since && now - s.busy_since > abandon_after }.each do |slot|
          slot.abandoned = true
          @slots.delete(slot)
          @abandoned_total = (@abandoned_total || 0) + 1
          @free += 1
          start_slot
          log_warn("Ruby handler thread #{slot.thread.name} busy for #{(now - slot.busy_since).round(1)} s (past abandon_after " \
                   "#{abandon_after} s): abandoned, its slot goes to a new thread")
        end
      end

      def check_starvation
        TaskerCore::FFI.check_starvation_warnings
      rescue StandardError
        nil
      end

      def log_error(message) = @logger.error(message)
      def log_warn(message) = @logger.warn(message)

      # (Logger never raises.)
      def monotonic = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
