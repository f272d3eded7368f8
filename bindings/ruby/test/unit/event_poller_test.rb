# frozen_string_literal: true

require "test_helper"
require "minitest/mock"

# EventPoller with the worker's poll stubbed: events are procs the executor stand-in runs. Every
# wait is for a condition (the deadlines only stop a hang).
class EventPollerTest < Minitest::Test
  # Runs an event (a proc) the way StepExecutor#execute would.
  class Runner
    def execute(event) = event.call
  end

  # What tasker_poll_step_event hands out: the events pushed, waiting up to the poll timeout.
  class Feed
    def initialize
      @events = []
      @lock = Mutex.new
      @pushed = ConditionVariable.new
    end

    def push(event) = @lock.synchronize { @events << event; @pushed.signal }
    def size = @lock.synchronize { @events.size }

    def poll(timeout_ms)
      @lock.synchronize do
        @pushed.wait(@lock, timeout_ms / 1000.0) if @events.empty?
        @events.shift
      end
    end
  end

  def setup
    @feed = Feed.new
    @gate = Queue.new
    @log = Queue.new
  end

  def teardown
    8.times { @gate << :open } # frees any handler still waiting on the gate
  end

  def with_poller(**options)
    poller = TaskerCore::Worker::EventPoller.new(executor: Runner.new, poll_timeout_ms: 20, **options)
    TaskerCore::FFI.stub(:poll_step_events, ->(timeout_ms) { @feed.poll(timeout_ms) }) do
      poller.start!
      begin
        yield poller
      ensure
        poller.stop!
      end
    end
  end

  # The next entry of `queue` (Ruby 3.1's Queue#pop has no timeout: checked every 10 ms).
  def take(what, queue)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 30
    loop do
      return queue.pop(true)
    rescue ThreadError
      flunk "timed out waiting for #{what}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.01
    end
  end

  def wait_for(what, queue, expected) = assert_equal(expected, take(what, queue), what)

  def test_a_stuck_handler_gives_its_slot_to_a_new_thread_after_abandon_after
    with_poller(concurrency: 1, abandon_after: 0.3) do |poller|
      @feed.push(-> { @log << :stuck_started; @gate.pop; @log << :stuck_returned })
      wait_for("the stuck handler to start", @log, :stuck_started)
      @feed.push(-> { @log << :second_ran })
      # With its only slot held, the second event runs only once the stuck thread is abandoned.
      wait_for("the second event", @log, :second_ran)
      assert_equal 1, poller.abandoned_count
      @gate << :open
      wait_for("the stuck handler to return", @log, :stuck_returned)
      @feed.push(-> { @log << :third_ran })
      wait_for("a third event on the one slot", @log, :third_ran)
    end
  end

  def test_stop_returns_after_stop_grace_with_a_handler_that_never_returns
    with_poller(concurrency: 2, abandon_after: nil, stop_grace: 0.2) do |poller|
      @feed.push(-> { @log << :started; @gate.pop })
      wait_for("the handler to start", @log, :started)
      stopper = Thread.new { poller.stop! }
      assert stopper.join(30), "stop! hung on a handler that never returns"
      assert_equal 1, poller.abandoned_count
      refute poller.active?
    end
  end

  def test_a_handler_thread_that_exits_is_replaced
    with_poller(concurrency: 1) do
      @feed.push(-> { @log << :exiting; Thread.current.exit })
      wait_for("the exiting handler", @log, :exiting)
      @feed.push(-> { @log << :next_ran })
      wait_for("the next event on a new thread", @log, :next_ran)
    end
  end

  def test_concurrency_bounds_running_handlers
    running = 0
    most = 0
    lock = Mutex.new
    with_poller(concurrency: 2, abandon_after: nil) do
      3.times do
        @feed.push(lambda do
          lock.synchronize { most = [most, running += 1].max }
          @log << :started
          @gate.pop
          lock.synchronize { running -= 1 }
          @log << :done
        end)
      end
      2.times { wait_for("two handlers to start", @log, :started) }
      # Both slots busy: the poller does not take the third event.
      assert_equal 1, @feed.size
      3.times { @gate << :open }
      rest = Array.new(4) { take("the remaining handlers", @log) }
      assert_equal({ started: 1, done: 3 }, rest.tally)
      assert_equal 2, most
    end
  end
end
