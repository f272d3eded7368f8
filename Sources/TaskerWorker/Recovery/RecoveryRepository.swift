import Foundation
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres

/// Steps `in_progress` for longer than the threshold, claimed by one worker (`/health/detailed`).
struct StaleInProgressSteps: Codable, Sendable, Equatable {
    /// The claiming worker's uuid, `unrecorded` (no `worker_uuid`: e.g. the upstream worker) or
    /// `malformed`.
    var workerUUID: String
    package var steps: Int
    var oldestSeconds: Double

    enum CodingKeys: String, CodingKey {
        case workerUUID = "worker_uuid"
        case steps
        case oldestSeconds = "oldest_seconds"
    }
}

/// The statements of crash recovery (`RecoveryStatements`), run on a pooled connection.
enum RecoveryRepository {
    /// Steps of dead workers (at most `limit`, oldest claim first). One round trip.
    static func scan(_ c: isolated PostgresConnection, limit: Int) throws(PostgresError) -> [LostWorkerStep] {
        try c.query(RecoveryStatements.scan, [limit]).map { row throws(PostgresError) in try LostWorkerStep(row: row) }
    }

    /// Stores `write` (the `worker_lost` result) for `step` only while its `in_progress`
    /// transition is still the one the scan saw and its worker still has no unexpired lease
    /// (`statement`: `ResultStatement(retiring: .lost, …)`). `.notInProgress` when nothing was
    /// written (another worker recovered it, the step moved on, or its worker is back). Run by
    /// `ResultWriter`, with its retries and lost-answer resolution.
    static func recover(
        _ c: isolated PostgresConnection, _ write: CompletionWrite, step: LostWorkerStep,
        statement: ResultStatement = .recoverFunctions
    ) throws(PostgresError) -> CompletionOutcome {
        let rows = try c.query(statement.statement.prepared, statement.values(for: write, lost: step))
        guard let msgID = try rows.first?.decode("msg_id", as: Int64?.self) else { return .notInProgress }
        return .completed(msgID: msgID)
    }

    /// Steps `in_progress` for longer than `thresholdSeconds`, by claiming worker.
    static func staleInProgress(_ c: isolated PostgresConnection, thresholdSeconds: Int) throws(PostgresError) -> [StaleInProgressSteps] {
        try c.query(RecoveryStatements.staleInProgress, [Double(thresholdSeconds)]).map { row throws(PostgresError) in
            StaleInProgressSteps(
                workerUUID: try row.decode("worker"), steps: try row.decode("steps"),
                oldestSeconds: try row.decode("oldest_seconds"))
        }
    }
}
