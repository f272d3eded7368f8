# frozen_string_literal: true

require "test_helper"
require "support/events"

class FunctionalTest < Minitest::Test
  F = TaskerCore::StepHandler::Functional

  def context(**options) = TaskerCore::StepContext.new(TaskerTest::Events.step_event(**options))

  def test_step_handler_with_context_or_upstream_keywords
    plain = TaskerCore.step_handler("fn.plain", register: false) { |context| { "name" => context.get_input("name") } }
    assert_equal "fn.plain", plain.handler_name
    assert_equal({ "name" => "Ada" }, plain.new.call(context(context: { "name" => "Ada" })).result)
    keyed = TaskerCore.step_handler("fn.keyed", depends_on: { cart: "load" }, inputs: [:currency], register: false) do |cart:, currency:, **|
      { "total" => cart["total"], "currency" => currency }
    end
    ctx = context(context: { "currency" => "EUR" }, dependency_results: { "load" => TaskerTest::Events.stored({ "total" => 9 }) })
    assert_equal({ "total" => 9, "currency" => "EUR" }, keyed.new.call(ctx).result)
  end

  def test_registration_in_the_shared_registry
    TaskerCore.step_handler("fn.registered") { |_c| {} }
    assert_includes TaskerCore.registry.registered_handlers, "fn.registered"
  end

  def test_decision_and_batch_helpers
    router = TaskerCore.decision_handler("fn.route", register: false) { |context| F::Decision.route(["b_#{context.get_input('n')}"], why: "n") }
    result = router.new.call(context(context: { "n" => 2 })).result
    assert_equal({ "type" => "create_steps", "step_names" => ["b_2"] }, result["decision_point_outcome"])
    assert_equal({ why: "n" }, result["routing_context"])
    skip_all = TaskerCore.decision_handler("fn.skip", register: false) { |_c| F::Decision.skip("none") }
    assert_equal({ "type" => "no_branches" }, skip_all.new.call(context).result["decision_point_outcome"])
    analyzer = TaskerCore.batch_analyzer("fn.plan", worker_template: "work", register: false) do |_c|
      F::BatchConfig.new(total_items: 45, batch_size: 10, max_workers: 3)
    end
    outcome = analyzer.new.call(context).result["batch_processing_outcome"]
    assert_equal ["work", 3, 45], outcome.values_at("worker_template_name", "worker_count", "total_items")
    worker = TaskerCore.batch_worker("fn.work", register: false) { |_c, batch| { "size" => batch.range.size } }
    cursor = { "batch_id" => "001", "start_cursor" => 0, "end_cursor" => 15, "batch_size" => 15 }
    assert_equal({ "size" => 15 }, worker.new.call(context(inputs: { "cursor" => cursor })).result)
  end
end
