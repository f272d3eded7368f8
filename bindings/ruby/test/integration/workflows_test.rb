# frozen_string_literal: true

require "test_helper"

# Ruby handlers on the embedded worker, through the real orchestration and PostgreSQL: the cases of
# the Python SDK's test_python_workflows.py plus method dispatch, resolver hints and domain events.
# Most run on one shared host (templates/sdk, namespace ruby_sdk); the timeout and drain cases have
# hosts (and namespaces) of their own.
class WorkflowsTest < Minitest::Test
  Api = TaskerTest::Api

  def setup
    TaskerTest.require_integration!(self)
  end

  def host = TaskerTest.shared_host

  def run_task(name, context = {}, states: %w[complete error])
    task = Api.submit(name, context)
    [task, Api.wait_for_task(task, states: states, hosts: [host])]
  end

  def test_a_chain_of_ruby_handlers_completes_with_the_right_results
    host
    task, state = run_task("ruby_chain", { "number" => 6 })
    assert_equal "complete", state
    square = Api.result(task, "chain_square")
    assert_equal({ "value" => 36 }, square["result"])
    assert_equal({ "handler" => "square_handler" }, square["metadata"]["custom"])
    assert_equal({ "value" => 43 }, Api.result(task, "chain_add")["result"])
    verify = Api.result(task, "chain_verify")
    assert_equal [true, "completed", { "value" => 43, "verified" => true }], verify.values_at("success", "status", "result")
  end

  def test_a_handler_exception_is_a_retryable_failure_with_its_class_message_and_backtrace
    host
    task, state = run_task("ruby_error")
    assert_equal "error", state
    stored = Api.result(task, "error_explode")
    assert_equal false, stored["success"]
    assert_equal true, stored["metadata"]["retryable"]
    assert_equal "KeyError", stored["error"]["error_type"]
    assert_includes stored["error"]["message"], "the ledger has no entry for order 42"
    assert_equal "KeyError", stored["metadata"]["custom"]["exception_class"]
    assert_match(/handlers\.rb:\d+/, stored["metadata"]["custom"]["stack_trace"])
    # People see the exception's class and trace: `tasker-dev task show`.
    dev = File.join(ENV.fetch("TASKER_BIN_PATH", File.join(TaskerTest::REPO, ".build", "debug")), "tasker-dev")
    shown = IO.popen([dev, "task", "show", task], chdir: TaskerTest::REPO, err: %i[child out], &:read)
    assert_includes shown, "exception KeyError"
    assert_match(/handlers\.rb:\d+/, shown)
  end

  def test_a_decision_point_creates_only_the_chosen_branch
    host
    small = Api.submit("ruby_decision", { "amount" => 20 })
    large = Api.submit("ruby_decision", { "amount" => 500 })
    assert_equal "complete", Api.wait_for_task(small, hosts: [host])
    assert_equal "complete", Api.wait_for_task(large, hosts: [host])
    assert_equal %w[decision_check decision_finalize decision_route decision_small], Api.steps(small).keys.sort
    assert_equal %w[decision_check decision_finalize decision_large decision_route], Api.steps(large).keys.sort
    assert_equal({ "ran" => ["decision_small"] }, Api.result(small, "decision_finalize")["result"])
    assert_equal({ "ran" => ["decision_large"] }, Api.result(large, "decision_finalize")["result"])
    route = Api.result(large, "decision_route")["result"]
    assert_equal({ "type" => "create_steps", "step_names" => ["decision_large"] }, route["decision_point_outcome"])
    assert_equal({ "amount" => 500 }, route["routing_context"])
  end

  def test_a_batch_creates_cursor_workers_and_converges
    host
    task, state = run_task("ruby_batch", { "item_count" => 45 })
    assert_equal "complete", state
    steps = Api.steps(task)
    assert_equal %w[batch_collect batch_plan batch_work_001 batch_work_002 batch_work_003], steps.keys.sort
    outcome = Api.result(task, "batch_plan")["result"]["batch_processing_outcome"]
    assert_equal ["create_batches", "batch_work", 3, 45], outcome.values_at("type", "worker_template_name", "worker_count", "total_items")
    worker = Api.result(task, "batch_work_002")["result"]
    assert_equal({ "batch_id" => "002", "start_cursor" => 15, "end_cursor" => 30, "batch_size" => 15 }, worker["cursor"])
    assert_equal 15, worker["items_processed"]
    collected = Api.result(task, "batch_collect")["result"]
    assert_equal({ "value" => (0...45).sum { |i| i * i }, "processed" => 45, "batch_ids" => %w[001 002 003],
                   "worker_count" => 3, "scenario" => "with_batches" }, collected.merge("batch_ids" => collected["batch_ids"].sort))
  end

  def test_checkpoint_yield_persists_progress_and_resumes_the_step
    host
    task, state = run_task("ruby_checkpoint", { "total" => 35 })
    assert_equal "complete", state
    assert_equal({ "sum" => (0...35).sum, "resumed_at" => [10, 20, 30], "items" => 35 }, Api.result(task, "checkpoint_sum")["result"])
  end

  def test_swift_built_ins_and_ruby_handlers_run_in_the_same_worker
    host
    task, state = run_task("ruby_mixed", { "order" => 7 })
    assert_equal "complete", state
    echo = Api.result(task, "mixed_echo")["result"]
    assert_equal({ "base" => 21 }, echo["config"])
    assert_equal 7, echo["context"]["order"]
    double = Api.result(task, "mixed_double")["result"]
    assert_equal 42, double["value"]
    assert_equal 7, double["echoed_context"]["order"]
    workers = %w[mixed_echo mixed_double mixed_noop].map { |step| Api.result(task, step)["metadata"]["worker_id"] }
    assert_equal 1, workers.uniq.size, workers.inspect
    assert_equal host.wait_for_line("READY").split.last, workers.first
  end

  def test_method_dispatch_runs_the_named_method
    host
    task, state = run_task("ruby_dispatch")
    assert_equal "complete", state
    assert_equal({ "entry" => "refund", "step" => "dispatch_refund", "method" => "refund" }, Api.result(task, "dispatch_refund")["result"])
    assert_equal({ "entry" => "charge", "fee" => 3 }, Api.result(task, "dispatch_charge")["result"])
    assert_equal({ "captured" => "call" }, Api.result(task, "dispatch_capture")["result"])
  end

  def test_a_missing_method_fails_the_step_for_good_naming_callable_and_method
    host
    task, state = run_task("ruby_dispatch_missing")
    assert_equal "error", state
    stored = Api.result(task, "missing_method")
    assert_equal [false, false], [stored["success"], stored["metadata"]["retryable"]]
    assert_equal "method_not_found", stored["error"]["error_type"]
    assert_includes stored["error"]["message"], "RubySdk::PaymentHandler"
    assert_includes stored["error"]["message"], "void_everything"
    assert_equal 1, Api.steps(task)["missing_method"]["attempts"]
  end

  def test_a_resolver_hint_picks_the_resolver
    host
    task, state = run_task("ruby_resolver")
    assert_equal "complete", state
    assert_equal({ "hinted" => true, "resolver" => "explicit_mapping" }, Api.result(task, "hinted_explicit")["result"])
    assert_equal "refund", Api.result(task, "hinted_class")["result"]["entry"]
  end

  def test_an_unknown_resolver_hint_fails_the_step_for_good_naming_it
    host
    task, state = run_task("ruby_resolver_unknown")
    assert_equal "error", state
    stored = Api.result(task, "unknown_resolver")
    assert_equal ["unknown_resolver", false], [stored["error"]["error_type"], stored["metadata"]["retryable"]]
    assert_includes stored["error"]["message"], "no_such_resolver"
  end

  def test_in_process_domain_events_reach_ruby_subscribers
    host
    task, state = run_task("ruby_events", { "name" => "Ada" })
    assert_equal "complete", state
    assert_equal "EVENT ruby_sdk.greeted #{task}", host.wait_for_line("EVENT ruby_sdk.greeted #{task}")
  end

  def test_a_step_not_completed_within_the_completion_timeout_gets_handler_timeout
    config = TaskerTest.worker_config("worker.mpsc_channels.ffi_dispatch" => { "completion_timeout_ms" => "1500" })
    slow = TaskerTest::Host.new("timeout-host", templates: "timeout", config: { "config_path" => config })
    begin
      slow.wait_for_line("READY")
      task = Api.submit("ruby_timeout", {}, namespace: "ruby_sdk_timeout")
      assert_equal "error", Api.wait_for_task(task, hosts: [slow])
      stored = Api.result(task, "timeout_slow")
      assert_equal ["handler_timeout", true], [stored["error"]["error_type"], stored["metadata"]["retryable"]]
      # The handler returns after the timeout: its late result is refused, saying so.
      late = slow.wait_for_line(/result not accepted/)
      assert_match(/timed out/, late)
      assert_equal "handler_timeout", Api.result(task, "timeout_slow")["error"]["error_type"]
      assert_equal 0, slow.terminate, slow.tail
    ensure
      slow.kill
    end
  end

  def test_sigterm_drains_running_ruby_steps_and_exits_zero
    drain = TaskerTest::Host.new("drain-host", templates: "drain", concurrency: 2)
    begin
      drain.wait_for_line("READY")
      task = Api.submit("ruby_drain", {}, namespace: "ruby_sdk_drain")
      drain.wait_for_line("STARTED drain_a")
      drain.wait_for_line("STARTED drain_b")
      assert_equal 0, drain.terminate, drain.tail
      assert_includes drain.lines, "STOPPED"
      steps = Api.steps(task)
      refute_includes steps.values.map { |s| s["current_state"] }, "in_progress", steps.transform_values { |s| s["current_state"] }.inspect
      %w[drain_a drain_b].each do |name|
        assert_equal "complete", steps[name]["current_state"], name
        assert_equal({ "drained" => true, "step" => name }, steps[name]["results"]["result"])
      end
      assert_nil steps["drain_after"]["results"], "drain_after must not have run"
      refute_includes drain.lines, "STARTED drain_after"
    ensure
      drain.kill
    end
  end
end
