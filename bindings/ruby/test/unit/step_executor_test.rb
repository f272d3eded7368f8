# frozen_string_literal: true

require "test_helper"
require "support/events"
require "minitest/mock"

# StepExecutor#invoke (no worker needed): what each handler outcome becomes.
class StepExecutorTest < Minitest::Test
  def setup
    @registry = TaskerCore::Registry::HandlerRegistry.new
    @executor = TaskerCore::Worker::StepExecutor.new(registry: @registry)
  end

  def outcome(callable, **handler)
    event = TaskerTest::Events.step_event(handler: { "callable" => callable }.merge(handler.transform_keys(&:to_s)))
    @executor.invoke(TaskerCore::StepContext.new(event))
  end

  def test_raised_exceptions_are_retryable_failures_with_class_and_backtrace
    @registry.register_handler("boom") { |_c| raise ArgumentError, "bad amount" }
    failed = outcome("boom")
    assert_equal ["ArgumentError", "bad amount", true], [failed.error_type, failed.message, failed.retryable]
    assert_match(/step_executor_test\.rb/, failed.metadata["stack_trace"])
    @registry.register_handler("unimplemented", Class.new(TaskerCore::StepHandler::Base))
    assert_equal "NotImplementedError", outcome("unimplemented").error_type
  end

  def test_permanent_errors_and_resolution_failures_are_not_retryable
    @registry.register_handler("perm") { |_c| raise TaskerCore::PermanentError, "never" }
    assert_equal ["PermanentError", false], outcome("perm").then { |o| [o.error_type, o.retryable] }
    missing = outcome("nobody")
    assert_equal ["handler_not_found", false], [missing.error_type, missing.retryable]
    assert_match(/nobody/, missing.message)
    unknown = outcome("perm", resolver: "mystery")
    assert_equal ["unknown_resolver", false], [unknown.error_type, unknown.retryable]
    assert_match(/mystery/, unknown.message)
    no_method = outcome("perm", method: "refund")
    assert_equal ["method_not_found", false], [no_method.error_type, no_method.retryable]
    assert_match(/"perm".*"refund"|"refund".*"perm"/, no_method.message)
  end

  def test_plain_values_become_successes
    @registry.register_handler("hash") { |_c| { "a" => 1 } }
    @registry.register_handler("nil") { |_c| nil }
    assert_equal({ "a" => 1 }, outcome("hash").result)
    assert_equal({}, outcome("nil").result)
  end
end

# StepExecutor#execute with the worker's completion calls stubbed: hostile events and results.
class StepExecutorCompletionTest < Minitest::Test
  def setup
    @registry = TaskerCore::Registry::HandlerRegistry.new
    @executor = TaskerCore::Worker::StepExecutor.new(registry: @registry, worker_id: "w1",
                                                     logger: TaskerCore::Logger.new("test"))
    @completed = []
    @checkpoints = []
  end

  # Runs `event` with completions recorded (and written as JSON, as the real call does);
  # `refuse` makes the first completion fail with that status.
  def execute(event, refuse: nil)
    complete = lambda do |id, json|
      document = JSON.parse(json)
      if refuse
        status = refuse
        refuse = nil
        raise TaskerCore::Errors::FFIError.new(status, :tasker_complete_step_event, "nested more than 128 levels")
      end
      @completed << [id, document]
    end
    TaskerCore::FFI.stub(:complete_step_event_json, complete) do
      TaskerCore::FFI.stub(:checkpoint_yield_step_event_json, ->(id, json) { @checkpoints << [id, JSON.parse(json)] }) do
        @executor.execute(event)
      end
    end
  end

  def event(callable = "h", **options) = TaskerTest::Events.step_event(handler: { "callable" => callable }, **options)

  def test_a_success_is_completed_once_with_the_worker_id
    @registry.register_handler("h") { |_c| { "ok" => true } }
    sent = event
    execute(sent)
    assert_equal 1, @completed.size
    id, document = @completed.first
    assert_equal sent["event_id"], id
    assert_equal [sent["step_uuid"], true, { "ok" => true }, "w1"],
                 [document["step_uuid"], document["success"], document["result"], document["metadata"]["worker_id"]]
  end

  def test_hostile_events_never_raise
    execute("junk")
    execute({ "event_id" => 42 })
    assert_empty @completed
    execute({ "event_id" => "e1", "step_uuid" => "s1", "task_sequence_step" => "nope" })
    assert_equal 1, @completed.size
    document = @completed.first.last
    assert_equal ["event_error", false, "s1"], [document["error"]["error_type"], document["metadata"]["retryable"], document["step_uuid"]]
    assert_match(/malformed step event/, document["error"]["message"])
  end

  def test_results_that_are_not_json_fail_the_step_for_good
    @registry.register_handler("h") { |_c| { "x" => Float::NAN } }
    execute(event)
    assert_equal 1, @completed.size
    error = @completed.first.last["error"]
    assert_equal ["handler_error", false], error.values_at("error_type", "retryable")
    assert_match(/not JSON/, error["message"])
  end

  def test_a_result_the_worker_refuses_as_invalid_is_replaced_by_a_failure
    @registry.register_handler("h") { |_c| { "deep" => true } }
    execute(event, refuse: TaskerCore::FFI::ERR_INVALID_ARGUMENT)
    assert_equal 1, @completed.size
    assert_match(/the worker refused the handler's result: .*128 levels/, @completed.first.last["error"]["message"])
  end

  def test_a_late_completion_is_logged_not_retried
    @registry.register_handler("h") { |_c| {} }
    execute(event, refuse: TaskerCore::FFI::ERR_UNKNOWN_EVENT)
    assert_empty @completed
  end

  def test_a_checkpoint_yield_is_sent_instead_of_a_result
    @registry.register_handler("h") { |_c| TaskerCore::Types::StepHandlerCallResult.checkpoint_yield(cursor: 5, items_processed: 5) }
    sent = event
    execute(sent)
    assert_empty @completed
    assert_equal [[sent["event_id"], { "step_uuid" => sent["step_uuid"], "cursor" => 5, "items_processed" => 5,
                                       "accumulated_results" => nil }]], @checkpoints
  end

  def test_exit_in_a_handler_is_a_failure_not_a_dead_thread
    @registry.register_handler("h") { |_c| exit 3 }
    execute(event)
    assert_equal "SystemExit", @completed.first.last["error"]["error_type"]
  end
end
