import Foundation

// The step documents written per step, as `encode(to:)` writes them through `JSONEncoder`, without
// Foundation (`JSONWriter`). Members are written in sorted key order, which is `JSONEncoder`'s with
// `.sortedKeys` and one of its arbitrary orders without. `JSONWriterTests` checks each against
// `JSONEncoder` on generated values; a key added to `encode(to:)` must be added here too.

extension StepExecutionResult {
    package func write(to writer: inout JSONWriter) throws(JSONWriter.NonConformingNumber) {
        writer.raw("{")
        writer.key("error", first: true)
        if let error { try error.write(to: &writer) } else { writer.null() }
        writer.key("metadata")
        try metadata.write(to: &writer)
        writer.key("orchestration_metadata")
        if let orchestrationMetadata { try orchestrationMetadata.write(to: &writer) } else { writer.null() }
        writer.key("result")
        try writer.value(result)
        writer.key("status")
        writer.string(status)
        writer.key("step_uuid")
        writer.uuid(stepUUID)
        writer.key("success")
        writer.bool(success)
        writer.raw("}")
    }
}

extension StepExecutionMetadata {
    package func write(to writer: inout JSONWriter) throws(JSONWriter.NonConformingNumber) {
        writer.raw("{")
        writer.key("completed_at", first: true)
        writer.string(ResultTimestamp.string(completedAt))
        writer.key("context")
        try writer.object(context)
        writer.key("custom")
        try writer.object(custom)
        writer.key("error_code")
        writer.optional(errorCode)
        writer.key("error_type")
        writer.optional(errorType)
        writer.key("execution_time_ms")
        writer.int(executionTimeMs)
        writer.key("handler_version")
        writer.optional(handlerVersion)
        writer.key("retryable")
        writer.bool(retryable)
        writer.key("started_at")
        writer.optional(startedAt.map(ResultTimestamp.string))
        writer.key("worker_hostname")
        writer.optional(workerHostname)
        writer.key("worker_id")
        writer.optional(workerID)
        writer.raw("}")
    }
}

extension StepExecutionError {
    package func write(to writer: inout JSONWriter) throws(JSONWriter.NonConformingNumber) {
        writer.raw("{")
        writer.key("backtrace", first: true)
        if let backtrace {
            writer.raw("[")
            for (index, line) in backtrace.enumerated() {
                if index > 0 { writer.raw(",") }
                writer.string(line)
            }
            writer.raw("]")
        } else {
            writer.null()
        }
        if !context.isEmpty {
            writer.key("context")
            try writer.object(context)
        }
        writer.key("error_type")
        writer.optional(errorType)
        writer.key("message")
        writer.string(message)
        writer.key("retryable")
        writer.bool(retryable)
        if let statusCode {
            writer.key("status_code")
            writer.int(statusCode)
        }
        writer.raw("}")
    }
}

extension OrchestrationMetadata {
    package func write(to writer: inout JSONWriter) throws(JSONWriter.NonConformingNumber) {
        writer.raw("{")
        writer.key("backoff_hint", first: true)
        if let backoffHint { backoffHint.write(to: &writer) } else { writer.null() }
        writer.key("custom")
        try writer.object(custom)
        writer.key("error_context")
        writer.optional(errorContext)
        writer.key("headers")
        writer.object(headers)
        writer.raw("}")
    }
}

extension BackoffHint {
    package func write(to writer: inout JSONWriter) {
        writer.raw("{")
        writer.key("backoff_type", first: true)
        writer.string(backoffType.rawValue)
        writer.key("context")
        writer.optional(context)
        writer.key("delay_seconds")
        writer.int(delaySeconds)
        writer.raw("}")
    }
}

extension StepMessage {
    /// The message as `JSONEncoder().encode(self)` writes it (members in sorted order), without Foundation.
    package func jsonString() -> String {
        var writer = JSONWriter(sortedKeys: true, escapeSlashes: true)
        writer.raw("{")
        writer.key("correlation_id", first: true)
        writer.uuid(correlationID)
        writer.key("step_uuid")
        writer.uuid(stepUUID)
        writer.key("task_uuid")
        writer.uuid(taskUUID)
        writer.raw("}")
        return writer.text
    }
}
