# frozen_string_literal: true

module TaskerCore
  module Types
    # A batchable step's outcome, stored under result["batch_processing_outcome"]:
    # {"type" => "create_batches", "worker_template_name", "worker_count", "cursor_configs",
    # "total_items"} or {"type" => "no_batches"}. A cursor config is {"batch_id" => "001",
    # "start_cursor", "end_cursor", "batch_size"}; each worker gets it as inputs["cursor"].
    BatchProcessingOutcome = Struct.new(:type, :worker_template_name, :worker_count, :cursor_configs, :total_items,
                                        keyword_init: true) do
      def self.no_batches = new(type: "no_batches")

      def self.create_batches(worker_template_name:, cursor_configs:, total_items:, worker_count: nil)
        configs = Array(cursor_configs)
        return no_batches if configs.empty?

        new(type: "create_batches", worker_template_name: worker_template_name.to_s,
            worker_count: worker_count || configs.size, cursor_configs: configs, total_items: Integer(total_items))
      end

      def create_batches? = type == "create_batches"

      def to_h
        return { "type" => type } unless create_batches?

        { "type" => type, "worker_template_name" => worker_template_name, "worker_count" => worker_count,
          "cursor_configs" => cursor_configs, "total_items" => total_items }
      end
    end
  end
end
