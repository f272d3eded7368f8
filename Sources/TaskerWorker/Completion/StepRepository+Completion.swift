import Foundation
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// What a completion did.
enum CompletionOutcome: Sendable, Equatable {
    /// Result stored, transition written, orchestration notified (`msgID` on `orchestration_step_results`).
    case completed(msgID: Int64)
    /// The step was no longer `in_progress`; nothing was written or sent (as upstream).
    case notInProgress
    /// An earlier attempt whose answer was lost with its connection had stored it
    /// (`StepRepository.isStored`); nothing was written again.
    case storedEarlier
}

extension StepRepository {
    /// Stores results: each write is one statement (`ResultStatement`): the
    /// `in_progress→enqueued_for_orchestration` (or `…as_error…`) transition with the upstream
    /// metadata, `results`, `in_process = false`, and the message to `orchestration_step_results`
    /// through `pgmq_send_with_notify`. Several writes share ONE transaction (one commit for all;
    /// under load the completion processor batches what has piled up). Each write is checked on its own: a step no longer
    /// `in_progress` gets `.notInProgress` and the others are still stored. A statement error rolls
    /// back the whole batch (nothing half-stored) and is thrown; the caller stores them one by one.
    /// `queues` picks the statement (static SQL or `tasker.pgmq_send_with_notify`).
    static func completeBatch(
        _ c: isolated PostgresConnection,
        _ writes: [CompletionWrite], queues: StepQueueStatements = .functions
    ) throws(PostgresError) -> [CompletionOutcome] {
        let statements = writes.map { queues.result.bound(to: $0) }
        // One statement commits on its own; several share one transaction. Either way, one round trip.
        let results = try c.pipeline(writes.count == 1 ? statements : [.plain("BEGIN")] + statements + [.plain("COMMIT")])
        return try results.dropFirst(writes.count == 1 ? 0 : 1).prefix(writes.count).map { result throws(PostgresError) in
            guard let msgID = try result[0].decode("msg_id", as: Int64?.self) else { return .notInProgress }
            return .completed(msgID: msgID)
        }
    }
}

/// One result ready to be written by `StepRepository.completeBatch`: the transition's metadata and
/// the orchestration message, encoded up front (so an encoding problem never aborts a batch).
struct CompletionWrite: Sendable {
    /// The step's message (for the result stored instead when this one is refused).
    package let message: StepMessage
    let workerUUID: UUID
    package let stepUUID: UUID
    package let toState: String
    package let metadata: String
    package let resultJSON: String
    package let body: String

    package init(
        message: StepMessage, success: Bool, resultJSON: String, workerUUID: UUID,
        now: Date = Date()
    ) {
        let eventType = success ? "EnqueueForOrchestration" : "EnqueueAsErrorForOrchestration"
        // Strings only, at a fixed depth: nothing here can be refused.
        var writer = JSONWriter(sortedKeys: false, escapeSlashes: true)
        writer.open("{")
        writer.member("event", #"{"type":"\#(eventType)","data":\#(resultJSON)}"#, first: true)
        writer.member("timestamp", RFC3339.string(now))
        writer.key("worker_uuid")
        writer.uuid(workerUUID)
        writer.key("correlation_id")
        writer.uuid(message.correlationID)
        writer.close("}")
        metadata = writer.text
        body = message.jsonString()
        self.message = message
        self.workerUUID = workerUUID
        stepUUID = message.stepUUID
        toState = success ? "enqueued_for_orchestration" : "enqueued_as_error_for_orchestration"
        self.resultJSON = resultJSON
    }
}
