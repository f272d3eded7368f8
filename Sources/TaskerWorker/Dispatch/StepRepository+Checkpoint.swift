import Foundation
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

extension StepRepository {
    /// Persists a checkpoint yield as upstream: `checkpoint = {cursor, items_processed, timestamp,
    /// accumulated_results, history}` where `history` is the previous history plus
    /// `{cursor, timestamp}`. Returns the stored record.
    static func persistCheckpoint(
        _ c: isolated PostgresConnection, stepUUID: UUID, yield: CheckpointYield,
        now: Date = Date()
    ) throws(CheckpointError) -> JSONValue {
        let timestamp = RFC3339.string(now)
        let record: JSONValue = .object([
            "cursor": yield.cursor, "items_processed": .int(Int64(yield.itemsProcessed)),
            "timestamp": .string(timestamp), "accumulated_results": yield.accumulatedResults ?? .null,
            "history": .array([]),
        ])
        let recordText: String
        let cursorText: String
        do {
            recordText = try record.jsonString()
            cursorText = try yield.cursor.jsonString()
        } catch {
            throw .notEncodable(stepUUID: stepUUID, reason: "\(error)")
        }
        let stored: JSONValue?
        do {
            stored = try c.query(
                """
                UPDATE tasker.workflow_steps
                   SET checkpoint = jsonb_set($1::jsonb, '{history}',
                           COALESCE(checkpoint->'history', '[]'::jsonb)
                           || jsonb_build_array(jsonb_build_object('cursor', $2::jsonb, 'timestamp', $3::text))),
                       updated_at = NOW()
                 WHERE workflow_step_uuid = $4 AND in_process
                RETURNING checkpoint
                """, [PostgresJSON(raw: recordText), PostgresJSON(raw: cursorText), timestamp, stepUUID]
            ).first?.decode("checkpoint")
        } catch {
            throw .database(error)
        }
        guard let stored else { throw .notInProcess(stepUUID: stepUUID) }
        return stored
    }
}

/// Why a handler's checkpoint was not stored (the step then fails with a `checkpoint_error`).
enum CheckpointError: Error, CustomStringConvertible {
    /// The cursor or the accumulated results have no JSON form (a NaN, nesting too deep).
    case notEncodable(stepUUID: UUID, reason: String)
    /// The step is no longer in process (its claim was lost or it was finished meanwhile).
    case notInProcess(stepUUID: UUID)
    /// The database failed.
    case database(PostgresError)

    package var description: String {
        switch self {
        case .notEncodable(let step, let reason): "cannot encode the checkpoint of step \(step): \(reason)"
        case .notInProcess(let step): "step \(step) is not in process; checkpoint not stored"
        case .database(let error): "\(error)"
        }
    }
}
