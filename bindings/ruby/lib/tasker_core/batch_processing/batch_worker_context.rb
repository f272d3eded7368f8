# frozen_string_literal: true

module TaskerCore
  module BatchProcessing
    # A batch worker's view of its step: the cursor the analyzer gave it (inputs["cursor"]), batch
    # metadata, whether it is the no-op placeholder of an empty batch, and its checkpoint.
    class BatchWorkerContext
      attr_reader :cursor, :batch_metadata, :checkpoint

      # @param context [Types::StepContext]
      def self.from_step_context(context) = new(context.input_data, context.checkpoint)

      # @raise [ArgumentError] a worker (not no-op) without a valid cursor
      def initialize(inputs, checkpoint = nil)
        inputs = inputs.is_a?(Hash) ? inputs : {}
        @no_op = inputs["is_no_op"] == true
        @checkpoint = checkpoint.is_a?(Hash) ? checkpoint : {}
        @cursor = @no_op || !inputs["cursor"].is_a?(Hash) ? {} : inputs["cursor"]
        @batch_metadata = inputs["batch_metadata"].is_a?(Hash) ? inputs["batch_metadata"] : {}
        validate_cursor! unless @no_op
      end

      def no_op? = @no_op
      def batch_id = cursor.fetch("batch_id", "unknown")
      def start_cursor = cursor["start_cursor"]
      def end_cursor = cursor["end_cursor"]
      def batch_size = cursor["batch_size"]

      # The range of integer cursors this worker covers (start...end).
      def range = (start_cursor...end_cursor)

      def checkpoint_cursor = checkpoint["cursor"]
      def accumulated_results = checkpoint["accumulated_results"]
      def checkpoint_items_processed = checkpoint["items_processed"] || 0
      def has_checkpoint? = !checkpoint_cursor.nil? # rubocop:disable Naming/PredicateName -- upstream's name

      private

      def validate_cursor!
        raise ArgumentError, "batch worker has no cursor in its inputs" if cursor.empty?

        %w[batch_id start_cursor end_cursor].each do |key|
          raise ArgumentError, "batch worker cursor lacks #{key}: #{cursor.inspect}" unless cursor.key?(key)
        end
        first = cursor["start_cursor"]
        last = cursor["end_cursor"]
        return unless first.is_a?(Integer) || last.is_a?(Integer)
        raise ArgumentError, "mixed cursor types: start=#{first.class}, end=#{last.class}" unless first.is_a?(Integer) && last.is_a?(Integer)
        raise ArgumentError, "cursor range #{first}...#{last} is invalid" if first.negative? || first > last
      end
    end

    # How a convergence step's batch ended: the analyzer's result and the results of the batch
    # workers (dependency results whose step names start with the worker prefix).
    class BatchAggregationScenario
      attr_reader :batchable_result, :batch_results, :worker_count

      # @param context [Types::StepContext]
      def self.detect(context, batchable_step_name, batch_worker_prefix)
        new(context, batchable_step_name, batch_worker_prefix)
      end

      def initialize(context, batchable_step_name, batch_worker_prefix)
        @batchable_result = context.get_dependency_result(batchable_step_name)
        @batch_results = context.dependency_results_with_prefix(batch_worker_prefix)
        @worker_count = @batch_results.size
      end

      def type = no_batches? ? :no_batches : :with_batches

      # True when no worker ran, or only the no-op placeholder.
      def no_batches? = @batch_results.empty? || @batch_results.values.all? { |r| r.is_a?(Hash) && r["no_op"] == true }
      def with_batches? = !no_batches?
    end
  end
end
