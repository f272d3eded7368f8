import Foundation
import TaskerModel
import TaskerPostgres
import TaskerStore

extension StepRepository {
    /// Persists a checkpoint yield as upstream: `checkpoint = {cursor, items_processed, timestamp,
    /// accumulated_results, history}` where `history` is the previous history plus
    /// `{cursor, timestamp}`. Returns the stored record.
    package static func persistCheckpoint(
        _ c: isolated PostgresConnection, stepUUID: UUID, yield: CheckpointYield,
        now: Date = Date()
    ) throws(PostgresError) -> JSONValue {
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
            throw PostgresError(.usage, "cannot encode the checkpoint of step \(stepUUID): \(error)")
        }
        let rows = try c.query(
            """
            UPDATE tasker.workflow_steps
               SET checkpoint = jsonb_set($1::jsonb, '{history}',
                       COALESCE(checkpoint->'history', '[]'::jsonb)
                       || jsonb_build_array(jsonb_build_object('cursor', $2::jsonb, 'timestamp', $3::text))),
                   updated_at = NOW()
             WHERE workflow_step_uuid = $4 AND in_process
            RETURNING checkpoint
            """, [PostgresJSON(raw: recordText), PostgresJSON(raw: cursorText), timestamp, stepUUID])
        guard let row = rows.first else {
            throw PostgresError(.usage, "step \(stepUUID) is not in process; checkpoint not stored")
        }
        return try row.decode("checkpoint")
    }
}
