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
/// crash-recovery scanner for the whole fleet, holding a turn only scanning keeps, taken over by
/// another worker when it stops.
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
            let poolFigures = await pool.statistics
            #expect(most <= 2, "an idle worker held \(most) server sessions; its pool: \(poolFigures)")
            // The window runs from one scan to the third after it (its scans and kept turns are
            // exactly three intervals' worth); the lease renewals and the poll reads, on timers of
            // their own, may each fall once more at either edge of it.
            #expect(Double(sent) <= budget.perSecond * seconds + 4, "\(sent) statements in \(seconds) s")
            try await worker.stop()
        }
    }

    /// One scanner for the fleet: of three workers (one not recovering), the scans over a measured
    /// window are one scanner's worth, not two; a lease row with no worker behind it (written as the
    /// benchmark's floor once did: renewed by nobody's scans) does not stop the fleet from being
    /// scanned; when the scanner stops, another takes the turn.
    @Test func oneWorkerOfTheFleetScansAndAnotherTakesOver() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            // A day-long lease whose "worker" never scans, older than every real one.
            try await harness.admin.query(
                """
                INSERT INTO tasker.worker_leases (worker_uuid, expires_at, renewed_at, started_at, hostname)
                VALUES ($1, clock_timestamp() + interval '1 day', clock_timestamp(), clock_timestamp() - interval '1 day', 'ghost')
                """, [UUID()])
            let interval = Duration.milliseconds(200)
            func started(recovers: Bool) async throws -> PipelineHarness.RunningWorker {
                var configuration = harness.workerConfiguration()
                configuration.worker.crashRecovery.enabled = recovers
                configuration.worker.crashRecovery.scanIntervalMs = Int(interval.inMilliseconds)
                let worker = PoolerWorkerTests.start(harness, configuration)
                try await waitUntil(timeout: .seconds(20)) { worker.daemon.runtime.dispatch.capacity.holdsLiveness }
                return worker
            }
            let bystander = try await started(recovers: false)
            let first = try await started(recovers: true)
            let second = try await started(recovers: true)
            func scans(_ worker: PipelineHarness.RunningWorker) -> Int { worker.daemon.statistics.snapshot.recoveryScans }
            func both() -> Int { scans(first) + scans(second) }

            try await waitUntil(timeout: .seconds(20)) { both() >= 1 }
            let (before, start) = (both(), ContinuousClock.now)
            try await waitUntil(timeout: .seconds(30)) { both() >= before + 10 }
            let elapsed = start.duration(to: .now)
            let scanned = both() - before
            // One scanner scans at most once per interval (plus one at each edge of the window); two
            // would scan twice as often.
            let oneScanner = Int(elapsed.inSeconds / interval.inSeconds) + 2
            #expect(scanned <= oneScanner, "\(scanned) scans in \(elapsed), one scanner's worth is \(oneScanner)")
            #expect(scans(bystander) == 0, "a worker that does not recover never takes the turn")

            // The scanner stops (it gives the turn up): the other one scans.
            let (stopping, staying) = scans(first) >= scans(second) ? (first, second) : (second, first)
            try await stopping.stop()
            let stayed = scans(staying)
            try await waitUntil(timeout: .seconds(20)) { scans(staying) >= stayed + 3 }
            #expect(scans(bystander) == 0)
            try await staying.stop()
            try await bystander.stop()
        }
    }
}
