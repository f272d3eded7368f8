# frozen_string_literal: true

require "test_helper"
require "support/events"
require "minitest/mock"

# Handlers that raise anything at all or return what cannot be written: every event still gets
# exactly one answer, and nothing escapes StepExecutor#execute (which would end a handler thread).
class HostileHandlersTest < Minitest::Test
  # #message and #to_s raise (a RuntimeError, itself, `exit`, `throw`).
  class RaisingMessage < StandardError
    def message = raise("message exploded")
  end

  class RaisingItself < StandardError
    def message = raise(self)
    def to_s = raise(self)
  end

  class ExitingMessage < StandardError
    def message = exit(4)
    def to_s = throw(:nowhere)
    def backtrace = raise(NoMemoryError)
  end

  # Not even #class, #respond_to? or #is_a? can be trusted.
  class Liar < Exception # rubocop:disable Lint/InheritException
    def class = raise("no class")
    def respond_to?(*) = raise("no respond_to?")
    def is_a?(*) = raise("no is_a?")
    def message = "liar"
  end

  # JSON writes it with #to_s.
  class ExitOnWrite
    def to_s = exit(5)
  end

  def setup
    @registry = TaskerCore::Registry::HandlerRegistry.new
    @executor = TaskerCore::Worker::StepExecutor.new(registry: @registry, worker_id: "w", logger: TaskerCore::Logger.new("test"))
    @completed = Queue.new
  end

  # Runs the handler on one event in a thread of its own (as a handler thread would) and answers
  # the one completion it sent; fails unless there was exactly one and nothing escaped.
  def answer_of(handler)
    @registry.register_handler("h", handler)
    event = TaskerTest::Events.step_event(handler: { "callable" => "h" })
    record = ->(id, json) { @completed << [id, JSON.parse(json)] }
    escaped = nil
    TaskerCore::FFI.stub(:complete_step_event_json, record) do
      thread = Thread.new do
        Thread.current.report_on_exception = false
        @executor.execute(event)
      rescue Exception => e # rubocop:disable Lint/RescueException
        escaped = e
      end
      thread.join
    end
    assert_nil escaped, "escaped StepExecutor#execute: #{escaped.inspect}"
    assert_equal 1, @completed.size, "answers: #{@completed.size}"
    id, document = @completed.pop
    assert_equal event["event_id"], id
    assert_equal event["step_uuid"], document["step_uuid"]
    document
  end

  def error_of(handler) = answer_of(handler).then { |d| [d["error"]["error_type"], d["metadata"]["retryable"], d["error"]["message"]] }

  def test_exceptions_whose_message_raises_still_fail_the_step
    type, retryable, message = error_of(->(_c) { raise RaisingMessage })
    assert_equal ["HostileHandlersTest::RaisingMessage", true], [type, retryable]
    refute_empty message
    assert_equal "HostileHandlersTest::RaisingItself", error_of(->(_c) { raise RaisingItself }).first
    type, _, message = error_of(->(_c) { raise ExitingMessage })
    assert_equal "HostileHandlersTest::ExitingMessage", type
    assert_match(/could not be read/, message)
    assert_equal ["HostileHandlersTest::Liar", true, "liar"], error_of(->(_c) { raise Liar })
  end

  def test_exit_throw_and_stack_overflow_fail_the_step
    assert_equal "SystemExit", error_of(->(_c) { exit 3 }).first
    assert_equal "UncaughtThrowError", error_of(->(_c) { throw :nowhere }).first
    deep = ->(n) { deep.call(n + 1) + 1 }
    assert_equal "SystemStackError", error_of(->(_c) { deep.call(0) }).first
  end

  def test_results_that_cannot_be_written_fail_the_step_for_good
    cyclic = {}
    cyclic["self"] = cyclic
    deep = 1
    200.times { deep = [deep] }
    [{ "x" => Float::NAN }, { "x" => -Float::INFINITY }, cyclic, { "deep" => deep }, { "x" => ExitOnWrite.new },
     { "x" => "\xff\xfe".b.force_encoding(Encoding::UTF_8) }].each do |result|
      type, retryable, message = error_of(->(_c) { result })
      assert_equal ["handler_error", false], [type, retryable], result.class
      assert_match(/not JSON/, message)
    end
  end

  def test_a_handler_that_ends_its_own_thread_still_answers_once
    type, retryable, message = error_of(->(_c) { Thread.current.exit })
    assert_equal ["handler_error", true], [type, retryable]
    assert_match(/thread ended/, message)
  end

  def test_a_completion_call_that_raises_unexpectedly_answers_once
    @registry.register_handler("h") { |_c| { "ok" => true } }
    event = TaskerTest::Events.step_event(handler: { "callable" => "h" })
    calls = 0
    flaky = lambda do |_id, _json|
      calls += 1
      raise ArgumentError, "string contains null byte"
    end
    TaskerCore::FFI.stub(:complete_step_event_json, flaky) { @executor.execute(event) }
    assert_equal 1, calls
  end
end
