/// The SQL behind `/v1/dlq…` (upstream's `DlqEntry` model in tasker-shared and its views
/// `v_dlq_dashboard`, `v_dlq_investigation_queue`, `v_task_staleness_monitoring`, migration 0005):
/// each read returns upstream's JSON document, built by PostgreSQL, in one column `doc`. The reason and
/// the resolution status are written in serde's spelling of upstream's enums (`StalenessTimeout`,
/// `ManuallyResolved`: its `DlqReason` and `DlqResolutionStatus` derive `Serialize` without renaming);
/// timestamps are upstream's `NaiveDateTime`s (no zone).
enum DLQStatements {
    /// serde's name of `d.dlq_reason`.
    private static let reason = """
        CASE d.dlq_reason::text
            WHEN 'staleness_timeout' THEN 'StalenessTimeout'
            WHEN 'max_retries_exceeded' THEN 'MaxRetriesExceeded'
            WHEN 'dependency_cycle_detected' THEN 'DependencyCycleDetected'
            WHEN 'worker_unavailable' THEN 'WorkerUnavailable'
            WHEN 'manual_dlq' THEN 'ManualDlq' END
        """

    /// serde's name of `d.resolution_status`.
    private static let resolutionStatus = """
        CASE d.resolution_status::text
            WHEN 'pending' THEN 'Pending'
            WHEN 'manually_resolved' THEN 'ManuallyResolved'
            WHEN 'permanently_failed' THEN 'PermanentlyFailed'
            WHEN 'cancelled' THEN 'Cancelled' END
        """

    /// `to_char` of a `timestamp` column as upstream's `NaiveDateTime`.
    private static func naive(_ column: String) -> String {
        #"to_char(\#(column), 'YYYY-MM-DD"T"HH24:MI:SS.US')"#
    }

    /// Upstream's `DlqEntry` of one `tasker.tasks_dlq` row `d`, its task snapshot bounded by `limit`
    /// (``TaskQueryStatements/bounded(_:limit:)``).
    private static func entry(limit: String) -> String {
        """
        jsonb_build_object(
            'dlq_entry_uuid', d.dlq_entry_uuid, 'task_uuid', d.task_uuid, 'original_state', d.original_state,
            'dlq_reason', \(reason), 'dlq_timestamp', \(naive("d.dlq_timestamp")),
            'resolution_status', \(resolutionStatus),
            'resolution_timestamp', \(naive("d.resolution_timestamp")),
            'resolution_notes', d.resolution_notes, 'resolved_by', d.resolved_by,
            'task_snapshot', \(TaskQueryStatements.bounded("d.task_snapshot", limit: limit)), 'metadata', d.metadata,
            'created_at', \(naive("d.created_at")), 'updated_at', \(naive("d.updated_at")))::text AS doc
        """
    }

    /// DLQ entries (`$1` resolution status in the database's spelling or NULL, `$2` limit, `$3` offset,
    /// `$4` snapshot bound), newest first.
    static let entries = """
        SELECT \(entry(limit: "$4"))
          FROM tasker.tasks_dlq d
         WHERE $1::text IS NULL OR d.resolution_status::text = $1::text
         ORDER BY d.dlq_timestamp DESC, d.dlq_entry_uuid DESC
         LIMIT $2::bigint OFFSET $3::bigint
        """

    /// The newest DLQ entry of task `$1` (`$2` snapshot bound).
    static let entryOfTask = """
        SELECT \(entry(limit: "$2"))
          FROM tasker.tasks_dlq d
         WHERE d.task_uuid = $1::uuid
         ORDER BY d.dlq_timestamp DESC, d.dlq_entry_uuid DESC
         LIMIT 1
        """

    /// Upstream's `DlqEntry::update_investigation`: entry `$1`'s status (`$2`, the database's
    /// spelling, or NULL to keep it; a status also sets `resolution_timestamp`), notes `$3`, resolver
    /// `$4` and metadata `$5` (each NULL to keep what the entry has). One row `updated`: 1, or 0 when
    /// there is no such entry. A second pending entry of the same task fails on the unique index of
    /// pending entries (23505).
    static let update = """
        WITH updated AS (
            UPDATE tasker.tasks_dlq
               SET resolution_status = COALESCE($2::text::tasker.dlq_resolution_status, resolution_status),
                   resolution_timestamp = CASE WHEN $2::text IS NOT NULL THEN NOW() ELSE resolution_timestamp END,
                   resolution_notes = COALESCE($3::text, resolution_notes),
                   resolved_by = COALESCE($4::text, resolved_by),
                   metadata = COALESCE($5::jsonb, metadata),
                   updated_at = NOW()
             WHERE dlq_entry_uuid = $1::uuid
            RETURNING dlq_entry_uuid)
        SELECT count(*)::bigint AS updated FROM updated
        """

    /// Upstream's `DlqStats` of each reason (`tasker.v_dlq_dashboard`), by reason.
    static let stats = """
        SELECT jsonb_build_object(
                'dlq_reason', \(reason), 'total_entries', d.total_entries, 'pending', d.pending,
                'manually_resolved', d.manually_resolved, 'permanent_failures', d.permanent_failures,
                'cancelled', d.cancelled, 'oldest_entry', \(naive("d.oldest_entry")),
                'newest_entry', \(naive("d.newest_entry")),
                'avg_resolution_time_minutes', d.avg_resolution_time_minutes::float8)::text AS doc
          FROM tasker.v_dlq_dashboard d
         ORDER BY d.dlq_reason::text
        """

    /// Upstream's `DlqInvestigationQueueEntry` of the pending entries (`tasker.v_dlq_investigation_queue`),
    /// highest priority score first, at most `$1`.
    static let investigationQueue = """
        SELECT jsonb_build_object(
                'dlq_entry_uuid', d.dlq_entry_uuid, 'task_uuid', d.task_uuid, 'original_state', d.original_state,
                'dlq_reason', \(reason), 'dlq_timestamp', \(naive("d.dlq_timestamp")),
                'minutes_in_dlq', d.minutes_in_dlq::float8, 'namespace_name', d.namespace_name,
                'task_name', d.task_name, 'current_state', d.current_state,
                'time_in_state_minutes', d.time_in_state_minutes, 'priority_score', d.priority_score::float8)::text AS doc
          FROM tasker.v_dlq_investigation_queue d
         ORDER BY d.priority_score DESC, d.dlq_entry_uuid
         LIMIT $1::bigint
        """

    /// Upstream's `StalenessMonitoring` of the waiting and running tasks
    /// (`tasker.v_task_staleness_monitoring`): stale first, then warning, then healthy, each longest in
    /// its state first; at most `$1`.
    static let staleness = """
        SELECT jsonb_build_object(
                'task_uuid', s.task_uuid, 'namespace_name', s.namespace_name, 'task_name', s.task_name,
                'current_state', s.current_state, 'time_in_state_minutes', s.time_in_state_minutes::integer,
                'task_age_minutes', s.task_age_minutes::integer,
                'staleness_threshold_minutes', s.staleness_threshold_minutes::integer,
                'health_status', s.health_status, 'priority', coalesce(s.priority, 0)::integer)::text AS doc
          FROM tasker.v_task_staleness_monitoring s
         ORDER BY CASE s.health_status WHEN 'stale' THEN 1 WHEN 'warning' THEN 2 ELSE 3 END,
                  s.time_in_state_minutes DESC, s.task_uuid
         LIMIT $1::bigint
        """
}
