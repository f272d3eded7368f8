# frozen_string_literal: true

require "securerandom"

module TaskerTest
  # Step events shaped like tasker_poll_step_event's (for unit tests).
  module Events
    module_function

    def step_event(handler: { "callable" => "shop.greet" }, context: {}, inputs: {}, dependency_results: {},
                   attempts: 1, max_attempts: 3, checkpoint: nil, step_name: "greet")
      step_uuid = SecureRandom.uuid
      task_uuid = SecureRandom.uuid
      {
        "event_id" => SecureRandom.uuid, "task_uuid" => task_uuid, "step_uuid" => step_uuid,
        "correlation_id" => SecureRandom.uuid,
        "task_sequence_step" => {
          "task" => { "task" => { "task_uuid" => task_uuid, "context" => context }, "task_name" => "greeting",
                      "task_version" => "1.0.0", "namespace_name" => "shop" },
          "workflow_step" => { "workflow_step_uuid" => step_uuid, "name" => step_name, "inputs" => inputs,
                               "attempts" => attempts, "max_attempts" => max_attempts, "retryable" => true,
                               "checkpoint" => checkpoint },
          "dependency_results" => dependency_results,
          "step_definition" => { "name" => step_name, "handler" => handler }
        }
      }
    end

    # A StepExecutionResult as the worker stores it.
    def stored(result) = { "step_uuid" => SecureRandom.uuid, "success" => true, "status" => "completed", "result" => result }
  end
end
