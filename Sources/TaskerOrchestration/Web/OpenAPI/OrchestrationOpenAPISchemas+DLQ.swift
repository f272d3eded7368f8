import TaskerHTTP
import TaskerModel

extension OrchestrationOpenAPISchemas {
    /// The DLQ's schemas (`/v1/dlq…`): upstream's `DlqEntry`, `DlqStats`, `DlqInvestigationQueueEntry`,
    /// `StalenessMonitoring` and the investigation update's request and answer. The reason and the
    /// resolution status are serde's spelling of upstream's enums (`StalenessTimeout`, `ManuallyResolved`).
    static let dlq: [String: JSONValue] = [
        "DlqReason": S.enumeration(
            DLQReason.allCases.map(\.serdeName), description: "Why the task was sent to the DLQ."),
        "DlqResolutionStatus": S.enumeration(
            DLQResolutionStatus.allCases.map(\.serdeName),
            description: "The investigation's status. Requests may also spell it as the database does (manually_resolved)."),
        "DlqEntry": S.object(
            [
                "dlq_entry_uuid": S.uuid, "task_uuid": S.uuid, "original_state": S.string,
                "dlq_reason": S.ref("DlqReason"), "dlq_timestamp": naiveDateTime,
                "resolution_status": S.ref("DlqResolutionStatus"), "resolution_timestamp": nullableNaiveDateTime,
                "resolution_notes": S.nullableString, "resolved_by": S.nullableString, "task_snapshot": S.anyValue,
                "metadata": S.anyValue, "created_at": naiveDateTime, "updated_at": naiveDateTime,
            ], optional: ["resolution_timestamp", "resolution_notes", "resolved_by", "metadata"]),
        "DlqStats": S.object(
            [
                "dlq_reason": S.ref("DlqReason"), "total_entries": S.int64, "pending": S.int64,
                "manually_resolved": S.int64, "permanent_failures": S.int64, "cancelled": S.int64,
                "oldest_entry": nullableNaiveDateTime, "newest_entry": nullableNaiveDateTime,
                "avg_resolution_time_minutes": S.nullableDouble,
            ], optional: ["oldest_entry", "newest_entry", "avg_resolution_time_minutes"],
            description: "One row of tasker.v_dlq_dashboard: the entries of one reason."),
        "DlqInvestigationQueueEntry": S.object(
            [
                "dlq_entry_uuid": S.uuid, "task_uuid": S.uuid, "original_state": S.string,
                "dlq_reason": S.ref("DlqReason"), "dlq_timestamp": naiveDateTime, "minutes_in_dlq": S.double,
                "namespace_name": S.nullableString, "task_name": S.nullableString, "current_state": S.nullableString,
                "time_in_state_minutes": S.nullableInt32, "priority_score": S.double,
            ], optional: ["namespace_name", "task_name", "current_state", "time_in_state_minutes"],
            description: "A pending entry of tasker.v_dlq_investigation_queue, highest priority score first."),
        "StalenessHealthStatus": S.enumeration(["healthy", "warning", "stale"]),
        "StalenessMonitoring": S.object(
            [
                "task_uuid": S.uuid, "namespace_name": S.nullableString, "task_name": S.nullableString,
                "current_state": S.string, "time_in_state_minutes": S.int32, "task_age_minutes": S.int32,
                "staleness_threshold_minutes": S.int32, "health_status": S.ref("StalenessHealthStatus"),
                "priority": S.int32,
            ], optional: ["namespace_name", "task_name"],
            description:
                "A waiting or running task of tasker.v_task_staleness_monitoring: stale first, then warning (80 % of its threshold)."),
        "UpdateInvestigationRequest": S.object(
            [
                "resolution_status": ["oneOf": [["type": "null"], S.ref("DlqResolutionStatus")]],
                "resolution_notes": S.nullableString, "resolved_by": S.nullableString, "metadata": S.anyValue,
            ], optional: ["resolution_status", "resolution_notes", "resolved_by", "metadata"],
            description:
                "The body of PATCH /v1/dlq/entry/{dlq_entry_uuid}: each field given replaces the entry's; a status sets resolution_timestamp."
        ),
        "UpdateInvestigationResponse": S.object([
            "success": S.boolean, "message": S.string, "dlq_entry_uuid": S.uuid,
        ]),
    ]
}
