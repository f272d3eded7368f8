import Foundation

// A result of a handler of another language (tasker-py) as upstream's worker stores it: MixedFleetTests
// (TaskerSystemTests) stores it for our orchestration, TaskerPyResultShapeTests (TaskerModelTests) reads it.

/// A tasker-py failure as upstream's worker stores it (its Python SDK's `failure_result`,
/// deserialized into upstream's `StepExecutionResult` and serialized again).
package func taskerPyFailure(step: UUID, retryable: Bool) -> String {
    let status = retryable ? "retryable_error" : "permanent_error"
    return """
        {"step_uuid":"\(step.uuidString.lowercased())","success":false,"result":null,"status":"\(status)",\
        "error":{"message":"python says no","error_type":"\(status)","backtrace":null,"retryable":\(retryable)},\
        "metadata":{"execution_time_ms":0,"handler_version":null,"retryable":\(retryable),\
        "completed_at":"2026-11-27T05:00:00.123456Z","worker_id":null,"worker_hostname":null,"started_at":null,\
        "custom":{},"error_code":null,"error_type":null,"context":{}},"orchestration_metadata":null}
        """
}
