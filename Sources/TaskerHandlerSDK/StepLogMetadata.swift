import Foundation
import Logging

/// Metadata for log lines on the step path: `task_uuid`, `step_uuid`, `correlation_id`, and with a
/// claimed step also `step_name`, `namespace` and `handler` (the callable). The worker adds the ones
/// for its messages and claimed steps (`TaskerWorker`'s `WorkerLogging.swift`).
package enum StepLogMetadata {
    /// For a step known by its ids.
    package static func of(
        taskUUID: UUID, stepUUID: UUID, correlationID: UUID,
        _ extra: Logger.Metadata = [:]
    ) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "task_uuid": "\(taskUUID)", "step_uuid": "\(stepUUID)", "correlation_id": "\(correlationID)",
        ]
        metadata.merge(extra) { _, new in new }
        return metadata
    }

    /// `logger` with `metadata` added (the logger a handler gets in ``StepContext/logger``).
    package static func logger(_ logger: Logger, _ metadata: Logger.Metadata) -> Logger {
        var logger = logger
        for (key, value) in metadata { logger[metadataKey: key] = value }
        return logger
    }
}
