import Foundation
import TaskerText

// The step documents written per step, as `encode(to:)` writes them through `JSONEncoder`, without
// Foundation (`JSONWriter`). Members are written in sorted key order, which is `JSONEncoder`'s with
// `.sortedKeys` and one of its arbitrary orders without. `JSONWriterTests` checks each against
// `JSONEncoder` on generated values; a key added to `encode(to:)` must be added here too.

extension StepExecutionResult {
    package func write(to writer: inout JSONWriter) throws(JSONWriter.Refusal) {
        writer.open("{")
        writer.key("error", first: true)
        if let error { try error.write(to: &writer) } else { writer.null() }
        writer.key("metadata")
        try metadata.write(to: &writer)
        writer.key("orchestration_metadata")
        if let orchestrationMetadata { try orchestrationMetadata.write(to: &writer) } else { writer.null() }
        writer.key("result")
        try writer.value(result)
        writer.member("status", status)
        writer.key("step_uuid")
        writer.uuid(stepUUID)
        writer.member("success", success)
        writer.close("}")
    }
}

extension StepExecutionMetadata {
    package func write(to writer: inout JSONWriter) throws(JSONWriter.Refusal) {
        writer.open("{")
        writer.member("completed_at", ResultTimestamp.string(completedAt), first: true)
        try writer.member("context", context)
        try writer.member("custom", custom)
        writer.member("error_code", errorCode)
        writer.member("error_type", errorType)
        writer.member("execution_time_ms", executionTimeMs)
        writer.member("handler_version", handlerVersion)
        writer.member("retryable", retryable)
        writer.member("started_at", startedAt.map(ResultTimestamp.string))
        writer.member("worker_hostname", workerHostname)
        writer.member("worker_id", workerID)
        writer.close("}")
    }
}

extension StepExecutionError {
    package func write(to writer: inout JSONWriter) throws(JSONWriter.Refusal) {
        writer.open("{")
        writer.key("backtrace", first: true)
        if let backtrace {
            writer.open("[")
            for (index, line) in backtrace.enumerated() {
                if index > 0 { writer.raw(",") }
                writer.string(line)
            }
            writer.close("]")
        } else {
            writer.null()
        }
        if !context.isEmpty { try writer.member("context", context) }
        writer.member("error_type", errorType)
        writer.member("message", message)
        writer.member("retryable", retryable)
        if let statusCode { writer.member("status_code", statusCode) }
        writer.close("}")
    }
}

extension OrchestrationMetadata {
    package func write(to writer: inout JSONWriter) throws(JSONWriter.Refusal) {
        writer.open("{")
        writer.key("backoff_hint", first: true)
        if let backoffHint { backoffHint.write(to: &writer) } else { writer.null() }
        try writer.member("custom", custom)
        writer.member("error_context", errorContext)
        writer.key("headers")
        writer.object(headers)
        writer.close("}")
    }
}

extension BackoffHint {
    package func write(to writer: inout JSONWriter) {
        writer.open("{")
        writer.member("backoff_type", backoffType.rawValue, first: true)
        writer.member("context", context)
        writer.member("delay_seconds", delaySeconds)
        writer.close("}")
    }
}
