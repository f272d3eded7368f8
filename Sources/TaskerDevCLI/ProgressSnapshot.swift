import ArgumentParser
import Dispatch
import Foundation
import Synchronization
import TaskerModel
import TaskerOrchestration
import TaskerPostgres
import TaskerWorker

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Latency percentiles in seconds over `count` samples (nil values when there are none).
struct LatencyPercentiles: Codable, Sendable, Equatable {
    var count: Int
    var p50: Double?
    var p95: Double?
    var p99: Double?
    var max: Double?
}

/// One workflow's tasks since the start.
struct WorkflowProgress: Codable, Sendable, Equatable {
    var name: String
    var total: Int
    var complete: Int
    var error: Int
}

/// What the display shows, read from the database in one pass (also `--once --json`).
struct ProgressSnapshot: Codable, Sendable {
    /// Start of the counted period (tasks created at or after it), UTC.
    var since: Date
    /// Database time of the snapshot.
    var at: Date
    var elapsedSeconds: Double
    var tasksByState: [String: Int]
    var stepsByState: [String: Int]
    var tasksTotal: Int
    var stepsTotal: Int
    var workflows: [WorkflowProgress]
    /// Step transitions to `complete` in the period, and in the last `rateWindowSeconds`.
    var stepsCompleted: Int
    var stepsCompletedInWindow: Int
    /// Tasks that reached `complete` in the last `rateWindowSeconds`.
    var tasksCompletedInWindow: Int
    var rateWindowSeconds: Double
    /// Completed steps per second over the last `rateWindowSeconds` (or the elapsed time, if shorter).
    var stepsPerSecond: Double
    var tasksPerSecond: Double
    /// `tasks.created_at` → `completed_at` of the tasks in state `complete`.
    var taskLatency: LatencyPercentiles
    /// Step `enqueued` → the next `enqueued_for_orchestration` / `enqueued_as_error_for_orchestration`
    /// transition (one sample per attempt).
    var stepLatency: LatencyPercentiles
    /// Step `enqueued` → the next `in_progress` (time in the queue until a worker claimed it).
    var stepQueueWait: LatencyPercentiles
}

/// The SQL behind a `ProgressSnapshot`. Tasks are selected by `requested_at` (indexed; orchestration
/// sets it to the same `NOW()` as `created_at`); latencies use `created_at`/`completed_at` and the
/// step transitions' `created_at`.
struct ProgressQuery: Sendable {
    var since: Date
    var rateWindowSeconds: Double

    static let resultStates = "'enqueued_for_orchestration', 'enqueued_as_error_for_orchestration'"

    func snapshot(_ c: isolated PostgresConnection) throws -> ProgressSnapshot {
        let now: Date = try c.query("SELECT now() AS now")[0].decode("now")
        let sessionTasks = "SELECT task_uuid FROM tasker.tasks WHERE requested_at >= $1::timestamptz AT TIME ZONE 'UTC'"

        var tasksByState: [String: Int] = [:]
        var workflows: [String: WorkflowProgress] = [:]
        for row in try c.query(
            """
            SELECT nt.name AS workflow, COALESCE(tt.to_state, 'pending') AS state, count(*)::int8 AS n
              FROM tasker.tasks t
              JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
              LEFT JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent
             WHERE t.requested_at >= $1::timestamptz AT TIME ZONE 'UTC'
             GROUP BY 1, 2
            """, [since])
        {
            let name: String = try row.decode("workflow")
            let state: String = try row.decode("state")
            let n: Int = try row.decode("n")
            tasksByState[state, default: 0] += n
            var workflow = workflows[name] ?? WorkflowProgress(name: name, total: 0, complete: 0, error: 0)
            workflow.total += n
            if state == "complete" { workflow.complete += n }
            if state == "error" { workflow.error += n }
            workflows[name] = workflow
        }

        var stepsByState: [String: Int] = [:]
        for row in try c.query(
            """
            SELECT COALESCE(wst.to_state, 'pending') AS state, count(*)::int8 AS n
              FROM tasker.workflow_steps ws
              LEFT JOIN tasker.workflow_step_transitions wst
                ON wst.workflow_step_uuid = ws.workflow_step_uuid AND wst.most_recent
             WHERE ws.task_uuid IN (\(sessionTasks))
             GROUP BY 1
            """, [since])
        {
            stepsByState[try row.decode("state", as: String.self), default: 0] += try row.decode("n", as: Int.self)
        }

        let window = rateWindowSeconds
        let counts = try c.query(
            """
            SELECT
              (SELECT count(*)::int8 FROM tasker.workflow_step_transitions wst
                 JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
                WHERE ws.task_uuid IN (\(sessionTasks)) AND wst.to_state = 'complete') AS steps_completed,
              (SELECT count(*)::int8 FROM tasker.workflow_step_transitions wst
                 JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
                WHERE ws.task_uuid IN (\(sessionTasks)) AND wst.to_state = 'complete'
                  AND wst.created_at > ($2::timestamptz - make_interval(secs => $3)) AT TIME ZONE 'UTC') AS steps_window,
              (SELECT count(*)::int8 FROM tasker.tasks t
                 JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent
                WHERE t.requested_at >= $1::timestamptz AT TIME ZONE 'UTC' AND tt.to_state = 'complete'
                  AND t.completed_at > ($2::timestamptz - make_interval(secs => $3)) AT TIME ZONE 'UTC') AS tasks_window
            """, [since, now, window])[0]

        let taskRow = try c.query(
            """
            SELECT count(*)::int8 AS n,
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY d) AS p50,
                   percentile_cont(0.95) WITHIN GROUP (ORDER BY d) AS p95,
                   percentile_cont(0.99) WITHIN GROUP (ORDER BY d) AS p99,
                   max(d) AS max
              FROM (SELECT extract(epoch FROM t.completed_at - t.created_at)::float8 AS d
                      FROM tasker.tasks t
                      JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent
                     WHERE t.requested_at >= $1::timestamptz AT TIME ZONE 'UTC'
                       AND tt.to_state = 'complete' AND t.completed_at IS NOT NULL) samples
            """, [since])[0]

        // Each step transition paired with the latest `enqueued` transition before it.
        let stepRow = try c.query(
            """
            WITH tr AS (
                SELECT wst.to_state, wst.created_at,
                       max(wst.created_at) FILTER (WHERE wst.to_state = 'enqueued') OVER (
                           PARTITION BY wst.workflow_step_uuid ORDER BY wst.sort_key
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS enqueued_at
                  FROM tasker.workflow_step_transitions wst
                  JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
                 WHERE ws.task_uuid IN (\(sessionTasks))
            ), samples AS (
                SELECT to_state IN (\(Self.resultStates)) AS is_result,
                       extract(epoch FROM created_at - enqueued_at)::float8 AS d
                  FROM tr
                 WHERE enqueued_at IS NOT NULL AND (to_state IN (\(Self.resultStates)) OR to_state = 'in_progress')
            )
            SELECT count(*) FILTER (WHERE is_result)::int8 AS rn,
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY d) FILTER (WHERE is_result) AS r50,
                   percentile_cont(0.95) WITHIN GROUP (ORDER BY d) FILTER (WHERE is_result) AS r95,
                   percentile_cont(0.99) WITHIN GROUP (ORDER BY d) FILTER (WHERE is_result) AS r99,
                   max(d) FILTER (WHERE is_result) AS rmax,
                   count(*) FILTER (WHERE NOT is_result)::int8 AS qn,
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY d) FILTER (WHERE NOT is_result) AS q50,
                   percentile_cont(0.95) WITHIN GROUP (ORDER BY d) FILTER (WHERE NOT is_result) AS q95,
                   percentile_cont(0.99) WITHIN GROUP (ORDER BY d) FILTER (WHERE NOT is_result) AS q99,
                   max(d) FILTER (WHERE NOT is_result) AS qmax
              FROM samples
            """, [since])[0]

        let elapsed = max(0, now.timeIntervalSince(since))
        let divisor = max(1, min(window, elapsed))
        let stepsWindow: Int = try counts.decode("steps_window")
        let tasksWindow: Int = try counts.decode("tasks_window")
        return ProgressSnapshot(
            since: since, at: now, elapsedSeconds: elapsed,
            tasksByState: tasksByState, stepsByState: stepsByState,
            tasksTotal: tasksByState.values.reduce(0, +), stepsTotal: stepsByState.values.reduce(0, +),
            workflows: workflows.values.sorted { $0.name < $1.name },
            stepsCompleted: try counts.decode("steps_completed"), stepsCompletedInWindow: stepsWindow,
            tasksCompletedInWindow: tasksWindow, rateWindowSeconds: window,
            stepsPerSecond: Double(stepsWindow) / divisor, tasksPerSecond: Double(tasksWindow) / divisor,
            taskLatency: LatencyPercentiles(
                count: try taskRow.decode("n"), p50: try taskRow.decode("p50"), p95: try taskRow.decode("p95"),
                p99: try taskRow.decode("p99"), max: try taskRow.decode("max")),
            stepLatency: LatencyPercentiles(
                count: try stepRow.decode("rn"), p50: try stepRow.decode("r50"), p95: try stepRow.decode("r95"),
                p99: try stepRow.decode("r99"), max: try stepRow.decode("rmax")),
            stepQueueWait: LatencyPercentiles(
                count: try stepRow.decode("qn"), p50: try stepRow.decode("q50"), p95: try stepRow.decode("q95"),
                p99: try stepRow.decode("q99"), max: try stepRow.decode("qmax")))
    }
}
