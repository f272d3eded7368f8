import Foundation
import TaskerStepModel

extension StepHandlerResult {
    /// The error code of decision failures.
    public static let decisionErrorCode = "DECISION_ERROR"

    /// A decision that creates `stepNames`: `{"decision_point_outcome":{..},"steps_created":[..]}`
    /// plus `routing_context` when given. An empty list is written as `no_branches`.
    public static func decision(
        createSteps stepNames: [String], routingContext: JSONValue? = nil
    ) -> StepHandlerResult {
        if stepNames.isEmpty {
            return skipBranches(reason: "no steps selected", routingContext: routingContext)
        }
        var result: [String: JSONValue] = [
            "decision_point_outcome": DecisionPointOutcome.createSteps(stepNames).jsonValue,
            "steps_created": .array(stepNames.map(JSONValue.string)),
        ]
        if let routingContext { result["routing_context"] = routingContext }
        return .success(.object(result))
    }

    /// A decision that creates nothing: `{"decision_point_outcome":{"type":"no_branches"},
    /// "skip_reason":..}` plus `routing_context` when given.
    public static func skipBranches(reason: String, routingContext: JSONValue? = nil) -> StepHandlerResult {
        var result: [String: JSONValue] = [
            "decision_point_outcome": DecisionPointOutcome.noBranches.jsonValue,
            "skip_reason": .string(reason),
        ]
        if let routingContext { result["routing_context"] = routingContext }
        return .success(.object(result))
    }

    /// A failed decision: error code `DECISION_ERROR`, not retryable.
    public static func decisionFailure(message: String, errorType: String = "decision_error") -> StepHandlerResult {
        .failure(StepFailure(message: message, errorType: errorType, errorCode: decisionErrorCode, retryable: false))
    }
}
