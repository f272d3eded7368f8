import Foundation
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Everything the worker reads about one step before claiming it, in one round trip
/// (task identity, step row, current state, dependency results).
package struct HydratedStep: Sendable, Equatable {
    package var taskUUID: UUID
    var namedTaskUUID: UUID
    package var correlationID: UUID
    package var taskContext: JSONValue
    package var taskName: String
    package var taskVersion: String
    package var namespace: String
    package var stepUUID: UUID
    package var stepName: String
    /// The template step this instance runs (`inputs.__template_step_name` for dynamic steps).
    package var templateStepName: String
    package var retryable: Bool
    package var maxAttempts: Int
    package var attempts: Int
    package var inputs: JSONValue
    package var checkpoint: JSONValue
    /// The `most_recent` transition's `to_state` (`pending` when there is none).
    package var currentState: String
    /// Results of every processed ancestor with results, by step instance name (raw JSON).
    package var dependencyResults: [String: JSONValue]
    /// The task's other columns as JSON text (`to_jsonb(task) - 'context'`), read only for FFI
    /// step events (`ForeignStepEvent.make`).
    package var taskRow: String = "{}"
    /// The step's other columns as JSON text (`to_jsonb(step) - 'inputs' - 'checkpoint'`).
    package var stepRow: String = "{}"
}

/// What a claim attempt did.
package enum ClaimOutcome: Sendable, Equatable {
    /// The step is ours: `in_progress`, `in_process = true`, attempts incremented, message archived.
    case claimed(attempts: Int)
    /// The step was not in a claimable state (another worker won, or it moved on); nothing changed.
    case notClaimable
    /// The database refused the claim: the claiming worker's liveness lease has expired or expires
    /// within a quarter of its duration (`ClaimStatement`); nothing changed. The worker stops
    /// claiming until a renewal is stored (`WorkerLeaseService.claimRefusedByDatabase`).
    case leaseLapsed
}

/// One step to claim: `StepRepository.hydrateAndClaim` (nil `taskUUID`: claim only, any task).
package struct ClaimRequest: Sendable, Equatable {
    package var taskUUID: UUID?
    package var stepUUID: UUID
    package var queue: String
    package var msgID: Int64
    /// Hydrate with the task and step rows (`StepStatements.hydrateWithRows`) for an FFI step event.
    var withRows: Bool

    package init(taskUUID: UUID?, stepUUID: UUID, queue: String, msgID: Int64, withRows: Bool = false) {
        self.taskUUID = taskUUID
        self.stepUUID = stepUUID
        self.queue = queue
        self.msgID = msgID
        self.withRows = withRows
    }
}

/// One claim attempt's identity, written as the `in_progress` transition's metadata: upstream's
/// `{"event":"{\"type\":\"Start\"}","timestamp":…}` (microseconds), plus `worker_uuid` (the claiming
/// worker; upstream records none, readers ignore unknown keys). The transition with exactly this
/// metadata exists if and only if this attempt committed (`StepRepository.findClaims`).
package struct ClaimStamp: Sendable, Equatable {
    /// The claiming worker (nil: not recorded, for tools and tests).
    package var worker: UUID?
    package var time: Date

    package init(worker: UUID? = nil, time: Date = Date()) {
        self.worker = worker
        self.time = time
    }

    /// The transition's metadata (JSON text).
    package var metadata: String {
        let start = #"{"event":"{\"type\":\"Start\"}","timestamp":"\#(RFC3339.string(time))""#
        guard let worker else { return start + "}" }
        return start + #","worker_uuid":"\#(worker.uuidString.lowercased())"}"#
    }
}

/// What `hydrateAndClaim` found and did for one step.
struct ClaimAttempt: Sendable {
    /// The step as read just before the claim (nil: no such step in that task; not read without a
    /// task uuid); a failure to decode it is returned here, since the claim may have happened.
    var hydrated: Result<HydratedStep?, PostgresError>
    package var claim: ClaimOutcome
}

/// The worker's SQL against the Tasker schema: hydrate, claim (one transaction), complete (one
/// transaction). Upstream spreads claim and completion over several transactions; a crash between
/// them leaves a step half-claimed or a result without its notification. Here each is atomic.
package enum StepRepository {
    /// Loads the step with its task, state and dependency results; nil when the step does not exist
    /// or belongs to another task.
    package static func hydrate(_ c: isolated PostgresConnection, taskUUID: UUID, stepUUID: UUID) throws(PostgresError) -> HydratedStep? {
        try c.query(StepStatements.hydrate, [stepUUID, taskUUID]).first.map(HydratedStep.init(row:))
    }

    /// Claims the step and acks its message atomically (one statement, `ClaimStatement`): the
    /// `enqueued→in_progress` transition (legacy `pending→in_progress` only when every parent is
    /// complete) with `stamp`'s metadata, `in_process = true`, `attempts + 1`, `last_attempted_at`,
    /// and `pgmq.archive` of the message. `timeout` (`timing.claim_timeout_seconds`) bounds the
    /// claim: one stuck on a lock gives up with an error and the message stays queued.
    ///
    /// The racing claimer blocks on the row lock of the current transition and then finds it no
    /// longer most recent, so it gets `.notClaimable` (a 23505 from the unique index means the same).
    package static func claim(
        _ c: isolated PostgresConnection, stepUUID: UUID, queue: String, msgID: Int64,
        timeout: Duration? = nil, stamp: ClaimStamp = ClaimStamp()
    ) throws(PostgresError) -> ClaimOutcome {
        let request = ClaimRequest(taskUUID: nil, stepUUID: stepUUID, queue: queue, msgID: msgID)
        do {
            return try hydrateAndClaim(c, [request], timeout: timeout, stamp: stamp)[0].claim
        } catch {
            if error.isUniqueViolation { return .notClaimable }
            throw error
        }
    }

    /// Hydrates and claims several steps (a poll read's messages) in ONE round trip and ONE
    /// transaction: one commit for all. Each claim is checked on its own (a step another worker won
    /// is `.notClaimable`, the others are still claimed); a statement error rolls the whole batch
    /// back and is thrown, so the caller claims them one by one. Results come in `requests` order.
    /// When the error `leavesOutcomeUnknown`, `findClaims` with the same `stamp` tells what happened.
    /// `queues` picks the claim statement per queue (static SQL or `pgmq.archive`).
    static func hydrateAndClaim(
        _ c: isolated PostgresConnection, _ requests: [ClaimRequest], timeout: Duration? = nil,
        stamp: ClaimStamp = ClaimStamp(), queues: StepQueueStatements = .functions
    ) throws(PostgresError) -> [ClaimAttempt] {
        let metadata = stamp.metadata
        let timeoutMs = timeout.map { String(max(1, $0.inMilliseconds)) }
        var statements: [PipelineStatement] = [.plain("BEGIN"), .prepared(StepStatements.claimSettings, [timeoutMs])]
        statements += claimStatements(requests) { request in
            queues.claim(queue: request.queue).bound(to: request, metadata: PostgresJSON(raw: metadata))
        }
        statements.append(.plain("COMMIT"))
        let results = try c.pipeline(statements)
        return try claimAttempts(results.dropFirst(2), requests)  // after BEGIN and the settings
    }

    /// Per request, its hydrate (when it names a task) and then `claim`, a statement returning one
    /// row whose `attempts` is NULL unless the step is (or was just) claimed.
    static func claimStatements(
        _ requests: [ClaimRequest],
        _ claim: (ClaimRequest) -> PipelineStatement
    ) -> [PipelineStatement] {
        requests.flatMap { request in
            let hydrate = request.withRows ? StepStatements.hydrateWithRows : StepStatements.hydrate
            return (request.taskUUID.map { [.prepared(hydrate, [request.stepUUID, $0])] } ?? []) + [claim(request)]
        }
    }

    /// Reads the results of `claimStatements` (starting at `results.startIndex`), in `requests` order.
    static func claimAttempts(
        _ results: ArraySlice<PostgresQueryResult>,
        _ requests: [ClaimRequest]
    ) throws(PostgresError) -> [ClaimAttempt] {
        var index = results.startIndex
        var attempts: [ClaimAttempt] = []
        for request in requests {
            var hydrated: Result<HydratedStep?, PostgresError> = .success(nil)
            if request.taskUUID != nil {
                // Decoded after the COMMIT: a row that cannot be read must not hide a claim that
                // happened, so the failure is returned next to the claim's outcome, not thrown.
                let rows = results[index]
                hydrated = Result { () throws(PostgresError) -> HydratedStep? in try rows.first.map(HydratedStep.init(row:)) }
                index += 1
            }
            let row = results[index][0]
            let claimed = try row.decode("attempts", as: Int?.self)
            // `lease_held` comes with the claim statements, not with `findClaims`' lookup.
            let leaseHeld = row.hasColumn("lease_held") ? try row.decode("lease_held", as: Bool.self) : true
            index += 1
            let outcome: ClaimOutcome = claimed.map { .claimed(attempts: $0) } ?? (leaseHeld ? .notClaimable : .leaseLapsed)
            attempts.append(ClaimAttempt(hydrated: hydrated, claim: outcome))
        }
        return attempts
    }
}

extension HydratedStep {
    /// Reads a row of `StepStatements.hydrate` (or `hydrateWithRows`).
    init(row: PostgresRow) throws(PostgresError) {
        let withRows = row.hasColumn("task_row")
        var dependencies: [String: JSONValue] = [:]
        if case .object(let members) = try row.decode("dependency_results", as: JSONValue.self) {
            dependencies = members
        }
        self.init(
            taskUUID: try row.decode("task_uuid"), namedTaskUUID: try row.decode("named_task_uuid"),
            correlationID: try row.decode("correlation_id"), taskContext: try row.decode("context"),
            taskName: try row.decode("task_name"), taskVersion: try row.decode("task_version"),
            namespace: try row.decode("namespace_name"), stepUUID: try row.decode("workflow_step_uuid"),
            stepName: try row.decode("step_name"), templateStepName: try row.decode("template_step_name"),
            retryable: try row.decode("retryable"), maxAttempts: try row.decode("max_attempts", as: Int?.self) ?? 3,
            attempts: try row.decode("attempts"), inputs: try row.decode("inputs"),
            checkpoint: try row.decode("checkpoint"), currentState: try row.decode("current_state"),
            dependencyResults: dependencies, taskRow: withRows ? try row.decode("task_row") : "{}",
            stepRow: withRows ? try row.decode("step_row") : "{}")
    }
}
