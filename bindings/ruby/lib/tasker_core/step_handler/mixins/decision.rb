# frozen_string_literal: true

require_relative "../../types/decision_point_outcome"

module TaskerCore
  module StepHandler
    module Mixins
      # Decision points: a `type: decision` step chooses which of its dependent template steps are
      # created. The result carries upstream's decision_point_outcome.
      #
      #   class RouteHandler < TaskerCore::StepHandler::Decision
      #     def call(context)
      #       context.get_input("amount") < 100 ? decision_success(steps: ["small"]) : decision_no_branches
      #     end
      #   end
      module Decision
        def capabilities = super + %w[decision_point dynamic_workflow step_creation]

        # Create the named template steps. `result_data` is merged into the result.
        #
        # @raise [PermanentError] `steps` is empty or holds a non-string / empty name
        def decision_success(steps:, result_data: {}, metadata: {}, routing_context: nil)
          names = Array(steps)
          validate_step_names!(names)
          decision_result(Types::DecisionPointOutcome.create_steps(names), result_data, metadata, routing_context)
        end

        # Create no branch.
        def decision_no_branches(result_data: {}, metadata: {}, routing_context: nil)
          decision_result(Types::DecisionPointOutcome.no_branches, result_data, metadata, routing_context)
        end
        alias skip_branches decision_no_branches

        private

        def decision_result(outcome, result_data, metadata, routing_context)
          result = stringify(result_data).merge("decision_point_outcome" => outcome.to_h)
          result["routing_context"] = routing_context if routing_context && !routing_context.empty?
          success(result: result, metadata: { "decision_point" => true, "outcome_type" => outcome.type,
                                              "branches_created" => outcome.step_names.size,
                                              "processed_by" => handler_name }.merge(stringify(metadata)))
        end

        def validate_step_names!(names)
          raise PermanentError.new("Invalid decision point outcome: step names must be a non-empty array",
                                   error_code: "INVALID_DECISION_OUTCOME") if names.empty?
          return if names.all? { |name| name.is_a?(String) && !name.empty? }

          raise PermanentError.new("Invalid decision point outcome: all step names must be non-empty strings, " \
                                   "got #{names.inspect}", error_code: "INVALID_DECISION_OUTCOME")
        end

        def stringify(hash) = (hash || {}).to_h.transform_keys(&:to_s)
      end
    end
  end
end
