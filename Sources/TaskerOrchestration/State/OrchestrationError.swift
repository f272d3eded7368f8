import Foundation
import TaskerModel
import TaskerPostgres

/// What went wrong while orchestrating, naming the task, step or template concerned.
public enum OrchestrationError: Error, CustomStringConvertible, Sendable {
    /// No `named_tasks` row for (namespace, name, version): no worker registered the template.
    case templateNotFound(namespace: String, name: String, version: String)
    /// A task with the same identity (template + context under the `strict` strategy) exists.
    case duplicateTask(namespace: String, name: String, version: String, existingTaskUUID: UUID?)
    /// A task request could not be read (queue message or command line).
    case invalidTaskRequest(String)
    /// The task does not exist.
    case taskNotFound(UUID)
    /// The step does not exist.
    case stepNotFound(UUID)
    /// `workflow_steps.results` is missing or is not a `StepExecutionResult` (strict hydration).
    case resultHydrationFailed(step: UUID, reason: String)
    /// A decision step's outcome names steps the template does not allow there.
    case invalidDecisionOutcome(step: UUID, reason: String)
    /// A batchable step's outcome cannot be turned into batch workers.
    case invalidBatchOutcome(step: UUID, reason: String)
    /// The template stored for a task cannot be used.
    case invalidTemplate(String)

    public var description: String {
        switch self {
        case .templateNotFound(let ns, let name, let version):
            return "no task template \(ns)/\(name)/\(version) is registered (start a worker that serves it)"
        case .duplicateTask(let ns, let name, let version, let existing):
            return "a task \(ns)/\(name)/\(version) with the same identity already exists"
                + (existing.map { " (\($0.uuidString.lowercased()))" } ?? "")
        case .invalidTaskRequest(let reason): return "invalid task request: \(reason)"
        case .taskNotFound(let task): return "task \(task.uuidString.lowercased()) does not exist"
        case .stepNotFound(let step): return "workflow step \(step.uuidString.lowercased()) does not exist"
        case .resultHydrationFailed(let step, let reason):
            return "results of step \(step.uuidString.lowercased()) are not a StepExecutionResult: \(reason)"
        case .invalidDecisionOutcome(let step, let reason):
            return "decision outcome of step \(step.uuidString.lowercased()) is invalid: \(reason)"
        case .invalidBatchOutcome(let step, let reason):
            return "batch outcome of step \(step.uuidString.lowercased()) is invalid: \(reason)"
        case .invalidTemplate(let reason): return "invalid task template: \(reason)"
        }
    }
}

extension Error {
    /// Whether processing a queue message failed for a reason that may pass (the message then stays
    /// queued and is read again after its visibility timeout) rather than because the message itself
    /// cannot be processed (it is then archived as poison): a lost connection, a serialization failure
    /// or deadlock, a lock timeout, a cancelled statement, a pool that timed out or is shutting down,
    /// or the task being cancelled.
    var isTransientOrchestrationFailure: Bool {
        if self is CancellationError { return true }
        guard let error = self as? PostgresError else { return false }
        switch error.kind {
        case .connectionFailed, .connectionClosed, .acquireTimeout, .shutdown, .cancelled:
            return true
        case .server, .decoding, .usage:
            // 55P03 lock_not_available (lock timeout), 57014 query_canceled (statement timeout).
            // Prepared statements gone stale (the connection closed itself; a fresh one works).
            return error.isConnectionLoss || error.isSerializationFailure || error.invalidatesPreparedStatements
                || error.sqlState == "55P03" || error.sqlState == "57014"
        }
    }
}
