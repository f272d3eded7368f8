# frozen_string_literal: true

require "test_helper"
require "support/events"

class StepContextTest < Minitest::Test
  include TaskerTest::Events

  def test_exposes_the_identity_inputs_and_configuration_of_the_step
    event = step_event(handler: { "callable" => "shop.greet", "method" => "wave", "resolver" => "explicit_mapping",
                                  "initialization" => { "greeting" => "Hi" } },
                       context: { "name" => "Ada" }, inputs: { "cursor" => { "batch_id" => "001" } })
    context = TaskerCore::StepContext.new(event)
    assert_equal event["task_uuid"], context.task_uuid
    assert_equal event["step_uuid"], context.step_uuid
    assert_equal event["event_id"], context.event_id
    assert_equal "greet", context.step_name
    assert_equal "shop", context.namespace_name
    assert_equal "greeting", context.task_name
    assert_equal "shop.greet", context.handler_name
    assert_equal "wave", context.handler_method
    assert_equal "explicit_mapping", context.handler_resolver
    assert_equal "Ada", context.get_input("name")
    assert_equal "Ada", context.get_input(:name)
    assert_equal "fallback", context.get_input_or("missing", "fallback")
    assert_equal({ "name" => "Ada" }, context.context)
    assert_equal "Hi", context.get_config("greeting")
    assert_equal({ "batch_id" => "001" }, context.batch_cursor)
    assert_equal({ "cursor" => { "batch_id" => "001" } }, context.input_data)
  end

  def test_unwraps_dependency_results
    context = TaskerCore::StepContext.new(step_event(dependency_results: {
                                                       "fetch" => stored({ "user" => { "id" => 7 } }),
                                                       "batch_work_002" => stored({ "v" => 2 }), "batch_work_001" => stored({ "v" => 1 })
                                                     }))
    assert_equal({ "user" => { "id" => 7 } }, context.get_dependency_result("fetch"))
    assert_equal 7, context.get_dependency_field("fetch", :user, "id")
    assert_nil context.get_dependency_field("fetch", "nope", "id")
    assert_nil context.get_dependency_result("absent")
    assert_equal %w[batch_work_001 batch_work_002], context.dependency_results_with_prefix("batch_work_").keys
  end

  def test_retry_state_and_checkpoint
    first = TaskerCore::StepContext.new(step_event(attempts: 1, max_attempts: 3))
    refute first.is_retry?
    refute first.is_last_retry?
    assert first.retryable?
    refute first.has_checkpoint?
    last = TaskerCore::StepContext.new(step_event(attempts: 3, max_attempts: 3,
                                                  checkpoint: { "cursor" => 20, "items_processed" => 20,
                                                                "accumulated_results" => { "sum" => 5 } }))
    assert last.is_retry?
    assert last.is_last_retry?
    assert_equal [3, 3], [last.retry_count, last.max_retries]
    assert last.has_checkpoint?
    assert_equal 20, last.checkpoint_cursor
    assert_equal 20, last.checkpoint_items_processed
    assert_equal({ "sum" => 5 }, last.accumulated_results)
  end

  def test_default_method_is_call_and_junk_handler_fields_are_ignored
    context = TaskerCore::StepContext.new(step_event(handler: { "callable" => "x", "method" => 42, "resolver" => "",
                                                                "initialization" => "nope" }))
    assert_equal "call", context.handler_method
    assert_nil context.handler_resolver
    assert_equal({}, context.step_config)
  end

  def test_refuses_events_without_a_step
    assert_raises(ArgumentError) { TaskerCore::StepContext.new("not an event") }
    assert_raises(ArgumentError) { TaskerCore::StepContext.new({ "event_id" => "x" }) }
    error = assert_raises(ArgumentError) { TaskerCore::StepContext.new({ "task_sequence_step" => {} }) }
    assert_match(/step_uuid/, error.message)
  end
end
