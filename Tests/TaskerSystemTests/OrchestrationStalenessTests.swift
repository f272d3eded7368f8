import Foundation
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration

/// The companion orchestration's staleness detector and DLQ (upstream TAS-49): tasks are made stale
/// by backdating their current transition in SQL, then one sweep runs.
@Suite(.serialized) struct OrchestrationStalenessTests {
    /// A one-step template whose `lifecycle` lowers the `steps_in_process` threshold to 2 minutes.
    static let lifecycleYAML = """
        name: stale_lifecycle
        namespace_name: examples
        version: 1.0.0
        lifecycle:
          max_steps_in_process_minutes: 2
        steps:
          - name: stale_lifecycle_step
            handler:
              callable: tasker.noop
        """

    /// Creates one task per context with the orchestration, then stops it: every task is in
    /// `steps_in_process` with its first steps enqueued and nobody working on them.
    static func tasks(_ harness: OrchestrationHarness, _ name: String, count: Int, from first: Int = 0) async throws -> [UUID] {
        let orchestration = harness.startOrchestration()
        var tasks: [UUID] = []
        for n in first..<(first + count) {
            tasks.append(try await orchestration.submit(OrchestrationHarness.request(name, ["number": .int(Int64(n))])).taskUUID)
        }
        try await orchestration.stop()
        return tasks
    }

    /// Moves a task with upstream's compare-and-set transition function.
    static func move(_ harness: OrchestrationHarness, _ task: UUID, from: String, to: String) async throws {
        let moved: Bool = try await harness.admin.query(
            "SELECT tasker.transition_task_state_atomic($1, $2, $3, NULL, '{}'::jsonb) AS moved", [task, from, to])[0]
            .decode("moved")
        #expect(moved, "task \(task) \(from) -> \(to)")
    }

    /// Makes the task look as if it entered its current state `minutes` ago.
    static func backdate(_ harness: OrchestrationHarness, _ task: UUID, minutes: Int) async throws {
        try await harness.admin.query(
            """
            UPDATE tasker.task_transitions SET created_at = created_at - make_interval(mins => $2::integer)
             WHERE task_uuid = $1 AND most_recent
            """, [task, minutes])
    }

    static func detector(
        _ harness: OrchestrationHarness, _ configure: (inout StalenessDetectionSettings) -> Void = { _ in }
    ) -> (StalenessDetector, PostgresConnectionPool, OrchestrationStatistics) {
        var settings = StalenessDetectionSettings()
        configure(&settings)
        let pool = harness.db.pool(maxConnections: 2)
        let statistics = OrchestrationStatistics()
        return (StalenessDetector(pool: pool, settings: settings, statistics: statistics), pool, statistics)
    }

    /// One `tasks_dlq` row.
    struct DLQEntry {
        var reason: String
        var originalState: String
        var status: String
        var snapshot: JSONValue
    }

    static func dlqEntries(_ harness: OrchestrationHarness, _ task: UUID) async throws -> [DLQEntry] {
        let rows = try await harness.admin.query(
            """
            SELECT dlq_reason::text AS reason, original_state, resolution_status::text AS status, task_snapshot
              FROM tasker.tasks_dlq WHERE task_uuid = $1
            """, [task])
        var entries: [DLQEntry] = []
        for row in rows {
            entries.append(
                DLQEntry(
                    reason: try row.decode("reason"), originalState: try row.decode("original_state"),
                    status: try row.decode("status"), snapshot: try row.decode("task_snapshot")))
        }
        return entries
    }

    /// The task's transitions to `error`: from which state, with which `transition_metadata.reason`.
    static func errorTransitions(_ harness: OrchestrationHarness, _ task: UUID) async throws -> [(from: String, reason: String?)] {
        let rows = try await harness.admin.query(
            """
            SELECT from_state, transition_metadata ->> 'reason' AS reason FROM tasker.task_transitions
             WHERE task_uuid = $1 AND to_state = 'error'
            """, [task])
        var transitions: [(from: String, reason: String?)] = []
        for row in rows {
            let from: String = try row.decode("from_state")
            let reason: String? = try row.decode("reason")
            transitions.append((from, reason))
        }
        return transitions
    }

    @Test func aTaskStaleInEachMonitoredStateGoesToTheDLQAndFreshTasksAreUntouched() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let tasks = try await Self.tasks(harness, "linear_workflow", count: 5)
            let (inProcess, waitingDeps, waitingRetry, freshInProcess, freshWaitingDeps) = (
                tasks[0], tasks[1], tasks[2], tasks[3], tasks[4]
            )
            try await Self.move(harness, waitingDeps, from: "steps_in_process", to: "waiting_for_dependencies")
            try await Self.move(harness, waitingRetry, from: "steps_in_process", to: "waiting_for_retry")
            try await Self.move(harness, freshWaitingDeps, from: "steps_in_process", to: "waiting_for_dependencies")
            // Default thresholds: 30 min steps_in_process / waiting_for_retry, 60 min waiting_for_dependencies.
            try await Self.backdate(harness, inProcess, minutes: 31)
            try await Self.backdate(harness, waitingDeps, minutes: 61)
            try await Self.backdate(harness, waitingRetry, minutes: 31)
            try await Self.backdate(harness, freshInProcess, minutes: 28)
            try await Self.backdate(harness, freshWaitingDeps, minutes: 58)

            let (detector, pool, statistics) = Self.detector(harness)
            let outcomes = try await detector.sweep()
            #expect(Set(outcomes.map(\.taskUUID)) == [inProcess, waitingDeps, waitingRetry])
            #expect(outcomes.allSatisfy { $0.action == "transitioned_to_dlq_and_error" && $0.movedToDLQ && $0.transitionedToError })
            #expect(outcomes.first { $0.taskUUID == waitingDeps }?.thresholdMinutes == 60)
            #expect(
                statistics.staleTasksDetected == 3 && statistics.dlqEntriesCreated == 3 && statistics.staleTasksTransitionedToError == 3)

            let stepCount: Int = try await harness.admin.query(
                "SELECT count(*)::integer AS n FROM tasker.workflow_steps WHERE task_uuid = $1", [inProcess])[0].decode("n")
            for (task, state) in [
                (inProcess, "steps_in_process"), (waitingDeps, "waiting_for_dependencies"), (waitingRetry, "waiting_for_retry"),
            ] {
                #expect(try await harness.taskState(task) == "error")
                let transitions = try await Self.errorTransitions(harness, task)
                #expect(transitions.count == 1 && transitions.first?.from == state && transitions.first?.reason == "staleness_timeout")
                let entries = try await Self.dlqEntries(harness, task)
                #expect(entries.count == 1)
                guard let entry = entries.first else { continue }
                #expect(entry.reason == "staleness_timeout" && entry.originalState == state && entry.status == "pending")
                #expect(entry.snapshot["task_uuid"]?.stringValue == task.uuidString.lowercased())
                #expect(entry.snapshot["current_state"]?.stringValue == state)
                #expect(entry.snapshot["namespace"]?.stringValue == "examples")
                guard case .array(let steps)? = entry.snapshot["steps"] else {
                    Issue.record("snapshot of \(task) has no steps: \(entry.snapshot)")
                    continue
                }
                #expect(steps.count == stepCount)
                #expect(steps.allSatisfy { $0["name"]?.stringValue != nil && $0["current_state"]?.stringValue != nil })
                #expect(steps.contains { $0["current_state"]?.stringValue == "enqueued" })
            }
            #expect(try await harness.taskState(freshInProcess) == "steps_in_process")
            #expect(try await harness.taskState(freshWaitingDeps) == "waiting_for_dependencies")
            #expect(try await Self.dlqEntries(harness, freshInProcess).isEmpty)
            #expect(try await Self.dlqEntries(harness, freshWaitingDeps).isEmpty)
            // A second sweep finds nothing more: the tasks are in error with a pending entry.
            #expect(try await detector.sweep().isEmpty)
            await pool.close()
        }
    }

    @Test func theTemplateLifecycleAndTheConfigurationSetTheThreshold() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db, extra: ["stale_lifecycle.yaml": Self.lifecycleYAML])
            let overridden = try await Self.tasks(harness, "stale_lifecycle", count: 1)[0]
            let plain = try await Self.tasks(harness, "linear_workflow", count: 1, from: 100)[0]
            try await Self.backdate(harness, overridden, minutes: 3)
            try await Self.backdate(harness, plain, minutes: 3)

            // Default 30 min for steps_in_process, but the template says 2.
            let (detector, pool, _) = Self.detector(harness)
            let outcomes = try await detector.sweep()
            #expect(outcomes.map(\.taskUUID) == [overridden])
            #expect(outcomes.first?.thresholdMinutes == 2)
            #expect(try await harness.taskState(overridden) == "error")
            #expect(try await harness.taskState(plain) == "steps_in_process")
            await pool.close()

            // The configured threshold applies to templates without a lifecycle.
            let (configured, configuredPool, _) = Self.detector(harness) { $0.stepsInProcessMinutes = 2 }
            #expect(try await configured.sweep().map(\.taskUUID) == [plain])
            #expect(try await Self.dlqEntries(harness, plain).count == 1)
            await configuredPool.close()
        }
    }

    @Test func twoOrchestrationsSweepingAtOnceMoveEachTaskOnce() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let tasks = try await Self.tasks(harness, "linear_workflow", count: 12)
            for (index, task) in tasks.enumerated() { try await Self.backdate(harness, task, minutes: 40 + index) }
            let (first, firstPool, firstStatistics) = Self.detector(harness)
            let (second, secondPool, secondStatistics) = Self.detector(harness)
            // Two of ours and upstream's own function (which takes no lock of ours) at the same time.
            let other = try await db.connect()
            async let a = first.sweep()
            async let b = second.sweep()
            async let upstream = other.query(
                "SELECT task_uuid, moved_to_dlq FROM tasker.detect_and_transition_stale_tasks(false, 100, 60, 30, 30, 24)")
            let (ours1, ours2, theirs) = try await (a, b, upstream)
            let upstreamMoved = try theirs.filter { try $0.decode("moved_to_dlq", as: Bool.self) }.count
            #expect(firstStatistics.dlqEntriesCreated + secondStatistics.dlqEntriesCreated + upstreamMoved == tasks.count)
            #expect(ours1.count + ours2.count + theirs.count >= tasks.count)
            for task in tasks {
                #expect(try await Self.dlqEntries(harness, task).count == 1, "task \(task)")
                #expect(try await Self.errorTransitions(harness, task).count == 1, "task \(task)")
            }
            await other.close()
            await firstPool.close()
            await secondPool.close()
        }
    }

    /// A role that can only connect cannot stop the sweep (issue #26): the advisory key earlier
    /// versions elected the sweeper with is no longer looked at, and the row lock that replaced it
    /// (`tasker.maintenance_locks`, migration 0009) cannot be taken, read or locked by that role.
    /// While an orchestration's sweep holds the row, another's is skipped; once it is free, it sweeps.
    @Test func aConnectOnlyRoleCannotStopTheSweep() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let task = try await Self.tasks(harness, "linear_workflow", count: 1)[0]
            try await Self.backdate(harness, task, minutes: 45)
            let (detector, pool, statistics) = Self.detector(harness)
            try await LivenessAttackTests.withAttacker(db) { attacker in
                // The old key, in the transaction-scoped and the session-scoped forms.
                try await attacker.execute("BEGIN")
                let held: Bool = try await attacker.query("SELECT pg_try_advisory_xact_lock(8386110886224097585) AS held")[0]
                    .decode("held")
                #expect(held)
                try await attacker.query("SELECT pg_advisory_lock(8386110886224097585)")
                for statement in [
                    "SELECT 1 FROM tasker.maintenance_locks FOR UPDATE",
                    "LOCK TABLE tasker.maintenance_locks IN ACCESS EXCLUSIVE MODE",
                    "DELETE FROM tasker.maintenance_locks",
                ] {
                    let error = await #expect(throws: PostgresError.self, "\(statement)") {
                        try await attacker.execute("SAVEPOINT attempt; \(statement)")
                    }
                    #expect(error?.sqlState == "42501", "\(statement): \(String(describing: error))")
                    try await attacker.execute("ROLLBACK TO SAVEPOINT attempt")
                }
                #expect(try await detector.sweep().map(\.taskUUID) == [task])
                #expect(statistics.dlqEntriesCreated == 1)
                try await attacker.execute("COMMIT")
            }
            // An orchestration's sweep in progress (its transaction holds the row): the other skips.
            let sweeping = try await db.connect()
            try await sweeping.execute("BEGIN")
            let locked: Bool = try await sweeping.query(StalenessRepository.Statements.tryLock)[0].decode("locked")
            #expect(locked)
            let second = try await Self.tasks(harness, "linear_workflow", count: 1, from: 1)[0]
            try await Self.backdate(harness, second, minutes: 45)
            #expect(try await detector.sweep().isEmpty)
            #expect(try await Self.dlqEntries(harness, second).isEmpty)
            try await sweeping.execute("COMMIT")
            #expect(try await detector.sweep().map(\.taskUUID) == [second])
            await sweeping.close()
            await pool.close()
        }
    }

    @Test func aDryRunOnlyReports() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let task = try await Self.tasks(harness, "linear_workflow", count: 1)[0]
            try await Self.backdate(harness, task, minutes: 45)
            let (detector, pool, statistics) = Self.detector(harness) { $0.dryRun = true }
            let outcomes = try await detector.sweep()
            #expect(outcomes.map(\.action) == ["would_transition_to_dlq_and_error"])
            #expect(statistics.staleTasksDetected == 1 && statistics.dlqEntriesCreated == 0)
            #expect(try await harness.taskState(task) == "steps_in_process")
            #expect(try await Self.dlqEntries(harness, task).isEmpty)
            await pool.close()
        }
    }

    @Test func theRunningOrchestrationSweepsAtStart() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let task = try await Self.tasks(harness, "linear_workflow", count: 1)[0]
            try await Self.backdate(harness, task, minutes: 45)
            let orchestration = harness.startOrchestration()
            try await harness.waitForTask(task, in: ["error"], timeout: .seconds(10))
            #expect(try await Self.dlqEntries(harness, task).count == 1)
            #expect(orchestration.service.statistics.dlqEntriesCreated == 1)
            try await orchestration.stop()
        }
    }
}
