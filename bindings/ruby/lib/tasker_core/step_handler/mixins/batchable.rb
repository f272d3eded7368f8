# frozen_string_literal: true

require_relative "../../types/batch_processing_outcome"
require_relative "../../batch_processing/batch_worker_context"

module TaskerCore
  module StepHandler
    module Mixins
      # Batch processing: an analyzer (`type: batchable`) plans cursor ranges; the worker created
      # per range (`type: batch_worker`) reads its cursor; a convergence step
      # (`type: deferred_convergence`) aggregates the workers' results.
      module Batchable
        def capabilities = super + %w[batchable batch_processing parallel_execution cursor_based deferred_convergence]

        # ---- analyzer -------------------------------------------------------------------------------

        # `worker_count` cursor ranges covering 0...total_items as evenly as upstream splits them
        # (ids "001", "002", ...). Yields each config and its index when a block is given.
        def create_cursor_configs(total_items, worker_count)
          raise ArgumentError, "worker_count must be > 0, got #{worker_count}" unless worker_count.to_i.positive?
          return [] unless total_items.to_i.positive?

          per_worker = (total_items.to_f / worker_count).ceil
          (0...worker_count).filter_map do |index|
            first = index * per_worker
            next if first >= total_items

            last = [first + per_worker, total_items].min
            config = { "batch_id" => format("%03d", index + 1), "start_cursor" => first, "end_cursor" => last,
                       "batch_size" => last - first }
            yield(config, index) if block_given?
            config
          end
        end

        # Cursor ranges of `batch_size` items (the last one shorter), widened so that there are at
        # most `max_workers` ranges; ids "001", "002", ... (the Python SDK's cursor_configs).
        def cursor_configs_for(total_items, batch_size:, max_workers: nil)
          raise ArgumentError, "batch_size must be > 0, got #{batch_size.inspect}" unless batch_size.is_a?(Integer) && batch_size.positive?
          return [] unless total_items.to_i.positive?

          size = batch_size
          size = (total_items.to_f / max_workers).ceil if max_workers.to_i.positive? && (total_items.to_f / size).ceil > max_workers
          (0...total_items).step(size).each_with_index.map do |first, index|
            last = [first + size, total_items].min
            { "batch_id" => format("%03d", index + 1), "start_cursor" => first, "end_cursor" => last, "batch_size" => last - first }
          end
        end

        # One `worker_template_name` step per cursor config (no configs: #no_batches_outcome).
        def create_batches_outcome(worker_template_name:, cursor_configs:, total_items:, metadata: {})
          return no_batches_outcome(reason: "empty_dataset", metadata: metadata) if cursor_configs.empty?

          outcome = Types::BatchProcessingOutcome.create_batches(worker_template_name: worker_template_name,
                                                                 cursor_configs: cursor_configs, total_items: total_items)
          success(result: { "batch_processing_outcome" => outcome.to_h, "worker_count" => cursor_configs.size,
                            "total_items" => total_items }.merge(metadata.to_h.transform_keys(&:to_s)))
        end

        # No worker is needed (one no-op placeholder worker runs).
        def no_batches_outcome(reason:, metadata: {})
          success(result: { "batch_processing_outcome" => Types::BatchProcessingOutcome.no_batches.to_h,
                            "reason" => reason }.merge(metadata.to_h.transform_keys(&:to_s)))
        end

        # ---- worker ---------------------------------------------------------------------------------

        # The worker's cursor, metadata and checkpoint.
        def get_batch_context(context) = BatchProcessing::BatchWorkerContext.from_step_context(context)

        # The no-op placeholder's result, or nil for a real worker.
        def handle_no_op_worker(batch_context)
          return nil unless batch_context.no_op?

          success(result: { "batch_id" => batch_context.batch_id, "no_op" => true, "processed_count" => 0 })
        end

        # A worker's result in upstream's shape (items_processed, items_succeeded, ...).
        def batch_worker_success(items_processed:, items_succeeded:, items_failed: 0, items_skipped: 0,
                                 last_cursor: nil, results: nil, errors: nil, metadata: {})
          data = { "items_processed" => items_processed, "items_succeeded" => items_succeeded,
                   "items_failed" => items_failed, "items_skipped" => items_skipped }
          data["last_cursor"] = last_cursor unless last_cursor.nil?
          data["results"] = results unless results.nil?
          data["errors"] = errors unless errors.nil?
          success(result: data.merge(metadata.to_h.transform_keys(&:to_s)), metadata: { "batch_worker" => true })
        end

        # ---- convergence ----------------------------------------------------------------------------

        def detect_aggregation_scenario(context, analyzer_step_name, batch_worker_prefix)
          BatchProcessing::BatchAggregationScenario.detect(context, analyzer_step_name, batch_worker_prefix)
        end

        # Yields the workers' results ({step name => result}) and returns a success with the
        # block's hash plus worker_count and scenario; no workers: #no_batches_aggregation_result.
        def aggregate_batch_worker_results(scenario, zero_metrics: {})
          return no_batches_aggregation_result(metadata: zero_metrics) if scenario.no_batches?

          aggregated = yield(scenario.batch_results).to_h.transform_keys(&:to_s)
          success(result: aggregated.merge("worker_count" => scenario.worker_count, "scenario" => "with_batches"))
        end

        def no_batches_aggregation_result(metadata: {})
          success(result: { "worker_count" => 0, "scenario" => "no_batches" }.merge(metadata.to_h.transform_keys(&:to_s)))
        end
      end
    end
  end
end
