# frozen_string_literal: true

module TaskerCore
  module Types
    # A decision step's outcome, stored under result["decision_point_outcome"]:
    # {"type" => "create_steps", "step_names" => [...]} or {"type" => "no_branches"}.
    DecisionPointOutcome = Struct.new(:type, :step_names, keyword_init: true) do
      def self.create_steps(step_names) = new(type: "create_steps", step_names: Array(step_names).map(&:to_s))
      def self.no_branches = new(type: "no_branches", step_names: [])

      def requires_step_creation? = type == "create_steps"

      def to_h
        type == "create_steps" ? { "type" => type, "step_names" => step_names } : { "type" => type }
      end
    end
  end
end
