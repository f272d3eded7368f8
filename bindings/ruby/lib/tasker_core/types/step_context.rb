# frozen_string_literal: true

require_relative "handler_definition"

module TaskerCore
  module Types
    # Everything a handler knows about the step it runs, read from the worker's step event
    # (`task_sequence_step`: task, workflow_step, dependency_results, step_definition). The raw
    # parts stay available as hashes with string keys (#task, #workflow_step, #step_definition,
    # #dependency_results, #event).
    class StepContext
      attr_reader :event, :task, :workflow_step, :step_definition, :dependency_results, :handler_definition

      # @param event [Hash] a polled step event
      # @raise [ArgumentError] the event lacks its step uuid or task_sequence_step
      def initialize(event)
        raise ArgumentError, "the step event is a #{event.class}, not an object" unless event.is_a?(Hash)

        @event = event
        sequence = event["task_sequence_step"]
        raise ArgumentError, "the step event has no task_sequence_step object" unless sequence.is_a?(Hash)

        wrapper = object(sequence["task"])
        @task_wrapper = wrapper
        @task = wrapper["task"].is_a?(Hash) ? wrapper["task"] : wrapper
        @workflow_step = object(sequence["workflow_step"])
        @step_definition = object(sequence["step_definition"])
        @dependency_results = object(sequence["dependency_results"])
        @handler_definition = HandlerDefinition.from_hash(@step_definition["handler"])
        raise ArgumentError, "the step event has no step_uuid" if step_uuid.empty?
      end

      # ---- identity -------------------------------------------------------------------------------

      def event_id = @event["event_id"].to_s
      def task_uuid = (@event["task_uuid"] || @task["task_uuid"]).to_s
      def step_uuid = (@event["step_uuid"] || @workflow_step["workflow_step_uuid"]).to_s
      def correlation_id = @event["correlation_id"]
      def step_name = (@workflow_step["name"] || @step_definition["name"]).to_s
      def namespace_name = (@task_wrapper["namespace_name"] || @task["namespace_name"]).to_s
      def task_name = (@task_wrapper["task_name"] || @task["name"]).to_s
      def task_version = (@task_wrapper["task_version"] || @task["version"]).to_s

      # The template's handler.callable.
      def handler_name = @handler_definition.callable

      # The entry point the template names (handler.method), "call" by default.
      def handler_method = @handler_definition.effective_method

      # The template's handler.resolver hint, or nil.
      def handler_resolver = @handler_definition.resolver

      # ---- inputs ---------------------------------------------------------------------------------

      # The task's context (its input).
      def context = object(@task["context"])
      alias task_context context

      # A task context field (string or symbol key), or nil.
      def get_task_field(name) = context[name.to_s]
      alias get_input get_task_field

      # A task context field, or `default` when absent or null.
      def get_input_or(name, default = nil)
        value = get_task_field(name)
        value.nil? ? default : value
      end

      # The step's own inputs (a batch worker's cursor lives here).
      def input_data = object(@workflow_step["inputs"])
      alias step_inputs input_data

      # The template's handler.initialization.
      def step_config = @handler_definition.initialization
      def get_config(key) = step_config[key.to_s]

      # ---- dependencies ---------------------------------------------------------------------------

      # The `result` a parent step returned (unwrapped from its stored StepExecutionResult), or nil.
      def get_dependency_result(step_name)
        stored = @dependency_results[step_name.to_s]
        stored.is_a?(Hash) && stored.key?("result") ? stored["result"] : stored
      end

      # A field inside a parent's result: get_dependency_field("fetch", "user", "id").
      def get_dependency_field(step_name, *path)
        result = get_dependency_result(step_name)
        return result if path.empty?
        return nil unless result.is_a?(Hash) || result.is_a?(Array)

        result.dig(*path.map { |key| key.is_a?(Integer) ? key : key.to_s })
      rescue TypeError
        nil
      end

      # Parent results whose step name starts with `prefix` (batch workers), ordered by name.
      def dependency_results_with_prefix(prefix)
        @dependency_results.keys.select { |name| name.start_with?(prefix) }.sort.to_h { |name| [name, get_dependency_result(name)] }
      end

      # ---- retry state ----------------------------------------------------------------------------

      # Attempts of this step so far, this one included.
      def retry_count = Integer(@workflow_step["attempts"] || 0, exception: false) || 0
      alias attempts retry_count

      def max_retries = Integer(@workflow_step["max_attempts"] || 1, exception: false) || 1
      alias max_attempts max_retries

      # Whether the template lets the step retry.
      def retryable? = @workflow_step.fetch("retryable", true) ? true : false

      # True when an earlier attempt of this step ran.
      def is_retry? = retry_count > 1 # rubocop:disable Naming/PredicateName -- upstream's name

      # True when a retryable failure now would not be retried.
      def is_last_retry? = retry_count >= max_retries # rubocop:disable Naming/PredicateName

      # ---- checkpoint -----------------------------------------------------------------------------

      # The checkpoint an earlier yield of this step persisted ({"cursor", "items_processed",
      # "accumulated_results", ...}), or nil.
      def checkpoint
        value = @workflow_step["checkpoint"]
        value.is_a?(Hash) && !value["cursor"].nil? ? value : nil
      end

      def checkpoint_cursor = checkpoint&.fetch("cursor", nil)
      def checkpoint_items_processed = (checkpoint && checkpoint["items_processed"]) || 0
      def accumulated_results = checkpoint&.fetch("accumulated_results", nil)
      def has_checkpoint? = !checkpoint.nil? # rubocop:disable Naming/PredicateName -- upstream's name

      # ---- batches --------------------------------------------------------------------------------

      # A batch worker's cursor {"batch_id", "start_cursor", "end_cursor", "batch_size"}, else nil.
      def batch_cursor
        cursor = input_data["cursor"]
        cursor.is_a?(Hash) ? cursor : nil
      end

      # True for the placeholder worker of a batch with no items.
      def no_op_batch? = input_data["is_no_op"] == true

      def to_s = "#<StepContext task_uuid=#{task_uuid} step_uuid=#{step_uuid} step_name=#{step_name}>"

      def inspect
        "#<StepContext step_uuid=#{step_uuid.inspect} step_name=#{step_name.inspect} handler_name=#{handler_name.inspect}>"
      end

      private

      def object(value) = value.is_a?(Hash) ? value : {}
    end
  end

  StepContext = Types::StepContext
end
