# frozen_string_literal: true

require "test_helper"

class ResultsTest < Minitest::Test
  Result = TaskerCore::Types::StepHandlerCallResult

  class Handler < TaskerCore::StepHandler::Base
    VERSION = "2.1.0"
  end

  class Router < TaskerCore::StepHandler::Decision; end
  class Planner < TaskerCore::StepHandler::Batchable; end

  def test_success_and_failure_shapes_as_upstream
    handler = Handler.new(config: { greeting: "Hi" })
    assert_equal({ "greeting" => "Hi" }, handler.config)
    assert_equal "handler", handler.handler_name
    assert_equal "2.1.0", handler.handler_version
    ok = handler.success(result: { "a" => 1 }, metadata: { "m" => 2 })
    assert ok.success?
    document = Result.execution_result(ok, step_uuid: "s", execution_time_ms: 5, worker_id: "w")
    assert_equal({ "step_uuid" => "s", "success" => true, "status" => "completed", "result" => { "a" => 1 },
                   "metadata" => { "execution_time_ms" => 5, "worker_id" => "w", "retryable" => false, "custom" => { "m" => 2 } } },
                 document)
    failed = handler.failure(message: "nope")
    assert_equal ["UnexpectedError", false, nil], [failed.error_type, failed.retryable, failed.error_code]
    failed = handler.failure(message: "later", error_type: "RetryableError", error_code: "E1", retryable: true)
    document = Result.execution_result(failed, step_uuid: "s", execution_time_ms: 1, worker_id: nil)
    assert_equal({ "message" => "later", "error_type" => "RetryableError", "retryable" => true }, document["error"])
    assert_equal ["RetryableError", "E1", true], document["metadata"].values_at("error_type", "error_code", "retryable")
    assert_equal "failed", document["status"]
    assert_raises(ArgumentError) { handler.success }
  end

  def test_exceptions_become_failures_with_class_message_and_backtrace
    error = begin
      raise KeyError, "no entry"
    rescue KeyError => e
      e
    end
    failed = Result.from_exception(error)
    assert_equal ["KeyError", "no entry", true], [failed.error_type, failed.message, failed.retryable]
    assert_equal "KeyError", failed.metadata["exception_class"]
    assert_match(/results_test\.rb/, failed.metadata["stack_trace"])
    permanent = Result.from_exception(TaskerCore::PermanentError.new("bad", error_code: "B1"))
    assert_equal ["PermanentError", false, "B1"], [permanent.error_type, permanent.retryable, permanent.error_code]
    retryable = Result.from_exception(TaskerCore::RetryableError.new("busy", retry_after: 3))
    assert_equal ["RetryableError", true, 3], [retryable.error_type, retryable.retryable, retryable.metadata["retry_after"]]
  end

  def test_handler_output_normalization
    assert_equal({}, Result.from_handler_output(nil).result)
    assert_equal({ "x" => 1 }, Result.from_handler_output({ "x" => 1 }).result)
    assert_equal [1, 2], Result.from_handler_output([1, 2]).result
    yielded = Handler.new.checkpoint_yield(cursor: 10, items_processed: 10, accumulated_results: { "s" => 1 })
    assert yielded.checkpoint?
    assert_equal({ "step_uuid" => "s", "cursor" => 10, "items_processed" => 10, "accumulated_results" => { "s" => 1 } },
                 yielded.to_checkpoint_data(step_uuid: "s"))
    assert_raises(ArgumentError) { Handler.new.checkpoint_yield(cursor: 1, items_processed: -1) }
  end

  def test_decision_outcomes
    router = Router.new
    result = router.decision_success(steps: ["large"], result_data: { note: "big" }, routing_context: { "amount" => 5 })
    assert_equal({ "note" => "big", "decision_point_outcome" => { "type" => "create_steps", "step_names" => ["large"] },
                   "routing_context" => { "amount" => 5 } }, result.result)
    assert_equal "create_steps", result.metadata["outcome_type"]
    assert_equal({ "type" => "no_branches" }, router.decision_no_branches.result["decision_point_outcome"])
    assert_raises(TaskerCore::PermanentError) { router.decision_success(steps: []) }
    assert_raises(TaskerCore::PermanentError) { router.decision_success(steps: ["ok", ""]) }
    assert_includes router.capabilities, "decision_point"
  end

  def test_batch_outcomes_and_cursor_configs
    planner = Planner.new
    configs = planner.cursor_configs_for(45, batch_size: 10, max_workers: 3)
    assert_equal [{ "batch_id" => "001", "start_cursor" => 0, "end_cursor" => 15, "batch_size" => 15 },
                  { "batch_id" => "002", "start_cursor" => 15, "end_cursor" => 30, "batch_size" => 15 },
                  { "batch_id" => "003", "start_cursor" => 30, "end_cursor" => 45, "batch_size" => 15 }], configs
    assert_equal [10, 10, 5], planner.cursor_configs_for(25, batch_size: 10).map { |c| c["batch_size"] }
    assert_equal [], planner.create_cursor_configs(0, 3)
    result = planner.create_batches_outcome(worker_template_name: "work", cursor_configs: configs, total_items: 45).result
    assert_equal({ "type" => "create_batches", "worker_template_name" => "work", "worker_count" => 3,
                   "cursor_configs" => configs, "total_items" => 45 }, result["batch_processing_outcome"])
    assert_equal [3, 45], result.values_at("worker_count", "total_items")
    empty = planner.create_batches_outcome(worker_template_name: "work", cursor_configs: [], total_items: 0).result
    assert_equal({ "type" => "no_batches" }, empty["batch_processing_outcome"])
    assert_equal "empty_dataset", empty["reason"]
  end

  def test_batch_worker_context_and_aggregation
    require "support/events"
    planner = Planner.new
    event = TaskerTest::Events.step_event(inputs: { "cursor" => { "batch_id" => "002", "start_cursor" => 15, "end_cursor" => 30,
                                                                  "batch_size" => 15 } })
    batch = planner.get_batch_context(TaskerCore::StepContext.new(event))
    assert_equal ["002", 15...30], [batch.batch_id, batch.range]
    assert_nil planner.handle_no_op_worker(batch)
    no_op = planner.get_batch_context(TaskerCore::StepContext.new(TaskerTest::Events.step_event(inputs: { "is_no_op" => true })))
    assert_equal true, planner.handle_no_op_worker(no_op).result["no_op"]
    assert_raises(ArgumentError) do
      planner.get_batch_context(TaskerCore::StepContext.new(TaskerTest::Events.step_event(inputs: { "cursor" => { "batch_id" => "1" } })))
    end
    deps = { "plan" => TaskerTest::Events.stored({ "total_items" => 2 }),
             "work_001" => TaskerTest::Events.stored({ "v" => 1 }), "work_002" => TaskerTest::Events.stored({ "v" => 2 }) }
    scenario = planner.detect_aggregation_scenario(TaskerCore::StepContext.new(TaskerTest::Events.step_event(dependency_results: deps)),
                                                   "plan", "work_")
    assert scenario.with_batches?
    aggregated = planner.aggregate_batch_worker_results(scenario) { |results| { "v" => results.values.sum { |r| r["v"] } } }
    assert_equal({ "v" => 3, "worker_count" => 2, "scenario" => "with_batches" }, aggregated.result)
  end
end
