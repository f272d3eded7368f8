import Foundation
import HTTPTypes
import HummingbirdTesting
import Synchronization
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// `WorkerHealthService` against a running worker and a real PostgreSQL: queue depth over the
/// worker's own queues only, step failure rate from real steps, event intake per deployment mode.
@Suite("Worker health service", .timeLimit(.minutes(3)))
struct HealthServiceTests {
    @Test
    func queueDepthCountsOnlyThisWorkersOwnQueues() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db)
            var thresholds = HealthThresholds()
            thresholds.queueDepthHealthyBelow = 2
            thresholds.queueDepthDegradedBelow = 3
            let health = WorkerHealthService(runtime: worker.daemon.runtime, thresholds: thresholds)
            #expect(await health.checkQueueProcessing().verdict == .healthy)

            // Another namespace's queue, however deep, is not this worker's.
            try await worker.admin.query("SELECT pgmq.create('worker_elsewhere_queue')")
            for _ in 0..<5 { try await Self.send(worker.admin, queue: "worker_elsewhere_queue", delaySeconds: 0) }
            #expect(await health.checkQueueProcessing().verdict == .healthy)

            // Delayed messages in the worker's own queue count (the worker cannot read them yet).
            for _ in 0..<2 { try await Self.send(worker.admin, queue: "worker_webtest_queue", delaySeconds: 300) }
            let degraded = await health.checkQueueProcessing()
            #expect(degraded.verdict == .degraded)
            #expect(degraded.message == "Own queues total depth: 2 (worker_webtest_queue=2)")
            let readiness = await health.readiness()
            #expect(!readiness.isReady)
            #expect(readiness.status == "not_ready")
            #expect(readiness.checks.database.verdict == .healthy)
            #expect(readiness.checks.commandProcessor.verdict == .healthy)

            try await Self.send(worker.admin, queue: "worker_webtest_queue", delaySeconds: 300)
            #expect(await health.checkQueueProcessing().verdict == .unhealthy)
            try await worker.admin.query("SELECT pgmq.purge_queue('worker_webtest_queue')")
            #expect(await health.readiness().isReady)
            try await worker.stop()
        }
    }

    /// The one queue-depth query (`PGMQ.queueMetrics`, used by readiness and `/metrics`) skips a
    /// queue that does not exist instead of failing for all of them.
    @Test
    func queueMetricsSkipQueuesThatDoNotExist() async throws {
        try await withTestDatabase { db in
            let admin = try await db.connect()
            try await admin.query("SELECT pgmq.create('worker_present_queue')")
            try await Self.send(admin, queue: "worker_present_queue", delaySeconds: 0)
            let metrics = try await PGMQ.queueMetrics(
                admin, queues: ["worker_missing_queue", "worker_present_queue", "worker_gone_queue"])
            #expect(metrics.map(\.queue) == ["worker_present_queue"])
            #expect(metrics.first?.depth == 1)
            #expect(try await PGMQ.queueMetrics(admin, queues: []).isEmpty)
            await admin.close()

            let pool = db.pool()
            let depths = try await WorkerScrape.queueDepths(pool, namespaces: ["missing", "present"])
            #expect(depths.map(\.namespace) == ["present"] && depths.first?.depth == 1)
            await pool.close()
        }
    }

    @Test
    func stepProcessingFollowsTheFailureRateOfRealSteps() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(
                db,
                yaml: """
                    name: health_steps
                    namespace_name: healthsteps
                    version: 1.0.0
                    steps:
                      - name: ok
                        handler: { callable: tasker.noop }
                      - name: boom
                        handler: { callable: tasker.fail }
                    """)
            let running = harness.startWorker(.withBuiltIns(), configuration: harness.configuration())
            let runtime = running.daemon.runtime
            let health = WorkerHealthService(runtime: runtime)
            let idle = health.checkStepProcessing()
            #expect(idle.verdict == .healthy)
            #expect(idle.message == "0 steps executed, 0 succeeded, 0 failed (0.0 % failure rate)")

            for _ in 0..<3 { try await run(harness, step: "ok", expecting: "enqueued_for_orchestration") }
            try await waitUntil { runtime.statistics.snapshot.totalExecuted == 3 }
            #expect(health.checkStepProcessing().verdict == .healthy)

            try await run(harness, step: "boom", expecting: "enqueued_as_error_for_orchestration")
            try await waitUntil { runtime.statistics.snapshot.totalExecuted == 4 }
            let failing = health.checkStepProcessing()
            #expect(failing.verdict == .unhealthy)
            #expect(failing.message == "4 steps executed, 3 succeeded, 1 failed (25.0 % failure rate)")
            let detailed = await health.detailed()
            #expect(detailed.status == "degraded")
            #expect(
                detailed.checks.stepProcessing
                    == HealthCheck(
                        status: .unhealthy, message: failing.message, durationMs: detailed.checks.stepProcessing.durationMs,
                        lastChecked: detailed.checks.stepProcessing.lastChecked))
            // Failing handlers do not make the worker unready.
            #expect(await health.readiness().isReady)
            try await running.stop()
        }
    }

    @Test(arguments: [
        (WorkerConfiguration.DeploymentMode.pollingOnly, "polling active"),
        (.eventDrivenOnly, "listener connected"),
        (.hybrid, "listener connected"),
    ])
    func theEventSystemIsHealthyWhileItReceives(mode: WorkerConfiguration.DeploymentMode, source: String) async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db) { $0.worker.eventSystems.worker.deploymentMode = mode }
            let health = WorkerHealthService(runtime: worker.daemon.runtime)
            try await waitUntil { health.checkEventSystem().message?.contains(source) == true }
            let check = health.checkEventSystem()
            #expect(check.verdict == .healthy, "\(check)")
            #expect(check.message?.hasPrefix("mode \(mode.rawValue), running") == true, "\(check)")
            try await worker.stop()
        }
    }

    @Test
    func aWorkerWithoutMessageIntakeIsNotReady() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db, waitForReady: false) {
                $0.worker.eventSystems.worker.deploymentMode = .disabled
            }
            let health = WorkerHealthService(runtime: worker.daemon.runtime)
            let readiness = await health.readiness()
            #expect(!readiness.isReady)
            #expect(readiness.checks.commandProcessor.verdict == .degraded)
            #expect(readiness.checks.database.verdict == .healthy)
            #expect(health.checkEventSystem().verdict == .degraded)
            #expect(try await worker.get("/health/ready").status == .serviceUnavailable)
            try await worker.stop()
        }
    }

    // MARK: - Helpers

    /// The settling is wired into readiness: with the queue table locked, queue metrics time out;
    /// the first timeout after a healthy answer keeps the worker ready (saying so), the second does not,
    /// and the worker is ready again once the lock is gone.
    @Test
    func oneQueueMetricsTimeoutKeepsTheWorkerReadyTheSecondDoesNot() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db)
            var thresholds = HealthThresholds()
            thresholds.queueMetricsTimeout = .milliseconds(500)
            let health = WorkerHealthService(runtime: worker.daemon.runtime, thresholds: thresholds)
            // The start-up wait's last probe may still be running, and it settles into the same history
            // (a timeout of it behind the lock below would count as the first): join it before the lock.
            _ = await WorkerHealthService(runtime: worker.daemon.runtime, shared: worker.daemon.runtime.healthProbes).readiness()
            #expect(await health.readiness().isReady)

            let locker = try await db.connect()
            try await locker.execute("BEGIN")
            try await locker.execute("LOCK TABLE pgmq.q_worker_webtest_queue IN ACCESS EXCLUSIVE MODE")
            let first = await health.readiness()
            #expect(first.isReady, "\(first.checks.queueProcessing)")
            #expect(first.checks.queueProcessing.message?.contains("not read within") == true)
            #expect(first.checks.queueProcessing.message?.contains("the previous answer stands") == true)
            let second = await health.readiness()
            #expect(!second.isReady)
            #expect(second.checks.queueProcessing.verdict == .unhealthy)
            try await locker.execute("ROLLBACK")
            await locker.close()

            // Ready again once a queue-metrics probe answers within its 500 ms: on a machine loaded by
            // the parallel suites (CI, 2 cores) that took more than 10 s once, so the bound is generous.
            try await waitUntil(timeout: .seconds(45)) { await health.readiness().isReady }
            try await worker.stop()
        }
    }

    static func send(_ admin: PostgresConnection, queue: String, delaySeconds: Int) async throws {
        try await admin.query(
            "SELECT pgmq.send($1::text, $2::jsonb, $3::integer)",
            [queue, PostgresJSON(raw: #"{"task_uuid":null}"#), delaySeconds])
    }

    func run(_ harness: PipelineHarness, step: String, expecting state: String) async throws {
        let task = try await harness.createTask(steps: [step])
        try await harness.enqueue(task, step)
        try await harness.waitForState(task[step], [state])
    }
}
