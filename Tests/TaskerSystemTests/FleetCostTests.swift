import Foundation
import TaskerOrchestration
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// What each worker of a fleet costs PostgreSQL when idle (issue #29, item 2): at most two server
/// sessions (its LISTEN session and one pooled connection: the background lane takes turns), a
/// bounded number of statements per second (`IdleStatementBudget`, docs/capacity.md), and one
/// crash-recovery scanner for the whole fleet, elected by the lease renewals, taken over by the
/// next-oldest worker when it stops.
@Suite("The cost of an idle worker", .serialized, .timeLimit(.minutes(3)))
struct FleetCostTests {
    static func sessions(_ harness: OrchestrationHarness) async throws -> Int {
        try await harness.admin.query(
            """
            SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND application_name LIKE 'tasker-worker%'
            """)[0].decode("n")
    }

    @Test func anIdleWorkerHoldsTwoSessionsAndSendsABoundedNumberOfStatements() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            var configuration = harness.workerConfiguration()
            // The default (ours: 1), not the harness's.
            configuration.common.database.pool.minConnections = CommonConfiguration.PoolSettings().minConnections
            configuration.common.database.pool.idleTimeoutSeconds = 1
            // The defaults an operator runs with (the harness polls every 100 ms).
            configuration.worker.eventSystems.worker.metadata.fallbackPoller.pollingIntervalMs = 1000
            let worker = PoolerWorkerTests.start(harness, configuration)
            let orchestration = harness.startOrchestration()
            try await waitUntil(timeout: .seconds(20)) { worker.daemon.runtime.dispatch.capacity.holdsLiveness }
            // Some work first, so that the pipeline's connections were opened.
            var tasks: [UUID] = []
            for n in 0..<3 {
                tasks.append(
                    try await orchestration.submit(OrchestrationHarness.request("linear_workflow", ["number": .int(Int64(n + 1))])).taskUUID
                )
            }
            for task in tasks { #expect(try await harness.waitForTask(task, in: ["complete", "error"]) == "complete") }
            try await orchestration.stop()
            // Idle: the connections above min_connections close after idle_timeout.
            try await waitUntil(timeout: .seconds(30)) { try await Self.sessions(harness) <= 2 }

            // Over the next three scans (the only worker is the fleet's scanner), never more than two
            // sessions, and no more statements than the budget.
            let pool = worker.daemon.runtime.pool
            let statistics = worker.daemon.statistics
            let (scans, acquires, start) = (statistics.snapshot.recoveryScans, await pool.statistics.totalAcquires, ContinuousClock.now)
            var most = 0
            while statistics.snapshot.recoveryScans < scans + 3 {
                most = max(most, try await Self.sessions(harness))
                try await Task.sleep(for: .milliseconds(50))
            }
            let seconds = start.duration(to: .now).inSeconds
            let sent = await pool.statistics.totalAcquires - acquires
            let budget = IdleStatementBudget(configuration: configuration, namespaces: worker.daemon.namespaces.count, scanner: true)
            print(
                "idle worker: \(sent) statements in \(String(format: "%.1f", seconds)) s (budget \(budget.perSecond)/s), at most \(most) sessions"
            )
            #expect(most <= 2, "an idle worker held \(most) server sessions")
            // Each of the three periodic sources may fall once more at the window's two edges.
            #expect(Double(sent) <= budget.perSecond * seconds + 3, "\(sent) statements in \(seconds) s")
            try await worker.stop()
        }
    }

    @Test func oneWorkerOfTheFleetScansAndTheNextOldestTakesOver() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            func started(recovers: Bool) async throws -> PipelineHarness.RunningWorker {
                var configuration = harness.workerConfiguration()
                configuration.worker.crashRecovery.enabled = recovers
                configuration.worker.crashRecovery.scanIntervalMs = 200
                let worker = PoolerWorkerTests.start(harness, configuration)
                // Its lease row is stored before the next worker starts: the workers' ages are known.
                try await waitUntil(timeout: .seconds(20)) { worker.daemon.runtime.dispatch.capacity.holdsLiveness }
                return worker
            }
            // The oldest does not recover ([worker.crash_recovery] enabled = false): never elected.
            let bystander = try await started(recovers: false)
            let elder = try await started(recovers: true)
            let younger = try await started(recovers: true)
            func scans(_ worker: PipelineHarness.RunningWorker) -> Int { worker.daemon.statistics.snapshot.recoveryScans }

            try await waitUntil(timeout: .seconds(20)) { scans(elder) >= 1 }
            let before = (scans(bystander), scans(younger), scans(elder))
            try await waitUntil(timeout: .seconds(20)) { scans(elder) >= before.2 + 5 }
            #expect(scans(bystander) == 0)
            #expect(scans(younger) == before.1, "only the elected worker scans")
            #expect(before.1 == 0, "the younger worker never saw itself the oldest")

            // The scanner stops (its lease row deleted): the next-oldest recovering worker takes over.
            try await elder.stop()
            try await waitUntil(timeout: .seconds(20)) { scans(younger) >= 3 }
            #expect(scans(bystander) == 0)
            try await younger.stop()
            try await bystander.stop()
        }
    }
}
