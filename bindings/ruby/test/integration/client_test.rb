# frozen_string_literal: true

require "test_helper"

# TaskerCore::Client (the worker library's orchestration client, tasker_client_*) against our
# orchestration's REST API. The worker runs in this test process (one per process), configured
# with [worker.orchestration_client] base_url = TASKER_TEST_ORCHESTRATION_URL; it serves the
# ruby_sdk_client namespace with a Ruby handler.
class ClientTest < Minitest::Test
  Client = TaskerCore::Client
  STARTED = Queue.new
  GATE = Queue.new

  def self.worker
    @worker ||= begin
      config = TaskerTest.worker_config("worker.orchestration_client" => {
                                          "base_url" => "\"#{ENV.fetch('TASKER_TEST_ORCHESTRATION_URL')}\"",
                                          "max_retries" => "1", "timeout_ms" => "10000"
                                        })
      registry = TaskerCore::Registry::HandlerRegistry.new
      registry.register_handler("ruby_sdk.greet") { |context| { "greeting" => "Hello, #{context.get_input('name')}" } }
      registry.register_handler("ruby_sdk.gated") do |context|
        STARTED << context.task_uuid
        GATE.pop # the test opens it once it cancelled the task
        { "gated" => true }
      end
      worker = TaskerCore::Worker::Bootstrap.new(
        config: { "config_path" => config, "template_path" => File.join(TaskerTest::TEMPLATES, "client") }, registry: registry
      )
      worker.start!
      Minitest.after_run { worker.shutdown! }
      worker
    end
  end

  def setup
    TaskerTest.require_integration!(self)
    self.class.worker
  end

  def create(context)
    Client.create_task(name: "ruby_client", namespace: "ruby_sdk_client", context: context.merge("nonce" => SecureRandom.uuid),
                       initiator: "minitest", source_system: "tasker-rb-swift-tests", reason: "client test")
  end

  def wait_for(task, states = %w[complete])
    TaskerTest.wait_until("task #{task} in #{states.join('/')}") { states.include?(Client.get_task(task)["status"]) }
  end

  def test_health_check
    assert_kind_of Hash, Client.health_check
  end

  def test_create_get_list_steps_step_and_audit
    created = create({ "name" => "Ada" })
    task = created.fetch("task_uuid")
    assert_equal "ruby_client", created["name"]
    wait_for(task)
    got = Client.get_task(task)
    assert_equal ["complete", "Ada"], [got["status"], got["context"]["name"]]
    listed = Client.list_tasks(limit: 50, offset: 0, namespace: "ruby_sdk_client", status: "complete")
    assert_includes listed["tasks"].map { |t| t["task_uuid"] }, task
    assert_equal [], Client.list_tasks(namespace: "no_such_namespace")["tasks"]
    steps = Client.list_task_steps(task)
    assert_equal ["client_greet"], steps.map { |s| s["name"] }
    step = steps.first
    assert_equal({ "greeting" => "Hello, Ada" }, step["results"]["result"])
    one = Client.get_step(task, step["step_uuid"])
    assert_equal [step["step_uuid"], "complete"], one.values_at("step_uuid", "current_state")
    audit = Client.get_step_audit_history(task, step["step_uuid"])
    refute_empty audit
    assert_equal ["client_greet", true], audit.first.values_at("step_name", "success")
  end

  def test_cancel
    done = create({ "name" => "Bo" })["task_uuid"]
    wait_for(done)
    error = assert_raises(TaskerCore::Errors::ClientError) { Client.cancel_task(done) } # a complete task cannot be cancelled
    assert_equal TaskerCore::FFI::ERR_CLIENT, error.status
    running = Client.create_task(name: "ruby_client_gated", namespace: "ruby_sdk_client", context: { "nonce" => SecureRandom.uuid })
    task = running.fetch("task_uuid")
    started = TaskerTest.wait_until("the gated step to start") do
      STARTED.pop(true)
    rescue ThreadError
      nil
    end
    assert_equal task, started
    begin
      Client.cancel_task(task)
      assert_equal "cancelled", Client.get_task(task)["status"]
    ensure
      GATE << :open
    end
  end

  def test_errors_name_what_was_wrong
    error = assert_raises(TaskerCore::Errors::ClientError) do
      Client.create_task(name: "no_such_workflow", namespace: "ruby_sdk_client", context: {})
    end
    assert_match(/no_such_workflow|404|not/i, error.message)
    assert_raises(TaskerCore::Errors::ClientError) { Client.get_task(SecureRandom.uuid) }
  end
end
