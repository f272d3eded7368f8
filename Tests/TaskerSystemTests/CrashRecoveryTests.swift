import Foundation
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Crash recovery (Sources/TaskerWorker/Recovery) against the real PostgreSQL: which steps the scan
/// takes (only those of workers without an unexpired liveness lease), exactly one result per step
/// however many scanners, the lease every claim statement checks. The SIGKILL of a real worker process,
/// the late result of a recovered step and `/health/detailed` are `CrashRecoveryWorkerTests`; the
/// absence wait, the capacity's liveness gate, the recovery statement and the configuration without a
/// database are `CrashRecoveryRuleTests` in TaskerWorkerTests.
@Suite("Crash recovery", .timeLimit(.minutes(3)))
struct CrashRecoveryTests {
    static let yaml = """
        name: recovery
        namespace_name: recovery
        version: 1.0.0
        steps:
          - name: dead_one
            handler: { callable: tasker.noop }
          - name: dead_two
            handler: { callable: tasker.noop }
          - name: upstream
            handler: { callable: tasker.noop }
          - name: live
            handler: { callable: tasker.noop }
        """

    static let liveWorker = UUID(uuidString: "01900000-0000-7000-8000-0000ffffffff")!

    /// Enqueues and claims `name` as worker `worker` would (nil: no `worker_uuid`, as upstream),
    /// under a lease that is deleted right after (the worker then died; a test that keeps it alive
    /// writes its lease again).
    static func claim(_ harness: PipelineHarness, _ task: PipelineHarness.SeededTask, _ name: String, worker: UUID?) async throws {
        let queue = QueueNames.workerQueue(namespace: harness.namespace)
        try await harness.enqueue(task, name)
        let msgID: Int64 = try await harness.admin.query("SELECT max(msg_id) AS id FROM pgmq.q_\(queue)")[0].decode("id")
        if let worker { try await harness.holdLease(worker) }
        let outcome = try await StepRepository.claim(
            harness.admin, stepUUID: task[name], queue: queue, msgID: msgID, stamp: ClaimStamp(worker: worker))
        #expect(outcome == .claimed(attempts: 1))
        if let worker { try await harness.dropLease(worker) }
    }

    static func scanner(_ db: TestDatabase, grace: Duration = .zero) -> RecoveryScanner {
        RecoveryScanner(
            pool: db.pool(maxConnections: 2), identity: WorkerIdentity(), statistics: WorkerStatistics(),
            interval: .milliseconds(100), grace: grace)
    }

    /// Two scanners at once: the steps of a dead worker get exactly one retryable `worker_lost`
    /// result each (result, transition and orchestration message); a step claimed with no
    /// `worker_uuid` and a step of a worker whose lease is unexpired are never touched.
    @Test func twoScannersRecoverOnlyDeadWorkersStepsOnce() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let task = try await harness.createTask(steps: ["dead_one", "dead_two", "upstream", "live"])
            let dead = UUID.v7()
            try await Self.claim(harness, task, "dead_one", worker: dead)
            try await Self.claim(harness, task, "dead_two", worker: dead)
            try await Self.claim(harness, task, "upstream", worker: nil)
            try await Self.claim(harness, task, "live", worker: Self.liveWorker)
            // The live worker's lease, written as WorkerLeaseService writes it.
            let holder = try await db.connect()
            try await WorkerLeaseRepository.renew(holder, worker: Self.liveWorker, hostname: "live", duration: .seconds(600))

            let scanners = [Self.scanner(db), Self.scanner(db)]
            let recovered = await withTaskGroup(of: Int.self) { group in
                for scanner in scanners {
                    group.addTask {
                        var tracker = AbsenceTracker(grace: .zero)
                        var count = 0
                        for _ in 0..<3 { count += await scanner.scanOnce(&tracker) }
                        return count
                    }
                }
                return await group.reduce(0, +)
            }
            #expect(recovered == 2)
            #expect(scanners.map { $0.statistics.snapshot.stepsRecovered }.reduce(0, +) == 2)

            for name in ["dead_one", "dead_two"] {
                let states = try await harness.transitions(task[name]).map(\.to)
                #expect(states == ["pending", "enqueued", "in_progress", "enqueued_as_error_for_orchestration"], "\(name)")
                let result = try await harness.result(task[name])
                #expect(result.error?.errorType == "worker_lost")
                #expect(result.isRetryable)
                #expect(result.error?.message.contains("worker_\(dead.uuidString.lowercased())") == true)
                let messages: Int = try await harness.admin.query(
                    "SELECT count(*)::int AS n FROM pgmq.q_orchestration_step_results WHERE message->>'step_uuid' = $1",
                    [task[name].uuidString.lowercased()])[0].decode("n")
                #expect(messages == 1, "\(name)")
            }
            #expect(try await harness.state(task["upstream"]) == "in_progress")
            #expect(try await harness.state(task["live"]) == "in_progress")

            // Once the live worker's lease has expired, its step is recovered too.
            try await holder.query(
                "UPDATE tasker.worker_leases SET expires_at = clock_timestamp() - interval '1 second' WHERE worker_uuid = $1",
                [Self.liveWorker])
            await holder.close()
            var tracker = AbsenceTracker(grace: .zero)
            #expect(await scanners[0].scanOnce(&tracker) == 1)
            #expect(try await harness.state(task["live"]) == "enqueued_as_error_for_orchestration")
            #expect(try await harness.state(task["upstream"]) == "in_progress")
            for scanner in scanners { await scanner.pool.close() }
        }
    }

    /// Every claim statement (PGMQ's functions, static SQL on the queue tables, a broker's) checks
    /// the claiming worker's lease on the database's clock: no lease, or one in its last quarter,
    /// is `.leaseLapsed` with nothing changed (step `enqueued`, message still queued); a lease that
    /// holds claims. A claim without a `worker_uuid` (upstream's shape) needs none.
    @Test(arguments: ["functions", "static", "broker"])
    func everyClaimStatementRequiresTheClaimingWorkersLease(variant: String) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let queue = QueueNames.workerQueue(namespace: harness.namespace)
            let statements: StepQueueStatements =
                switch variant {
                case "functions": .functions
                case "static": StepQueueStatements(layouts: [queue: .withLastReadAt])
                default: .broker
                }
            let worker = UUID.v7()
            let task = try await harness.createTask(steps: ["dead_one", "dead_two", "upstream", "live"])
            func attempt(_ name: String, _ stamp: ClaimStamp) async throws -> ClaimOutcome {
                try await harness.enqueue(task, name)
                let msgID: Int64 = try await harness.admin.query("SELECT max(msg_id) AS id FROM pgmq.q_\(queue)")[0].decode("id")
                let request = ClaimRequest(taskUUID: task.taskUUID, stepUUID: task[name], queue: queue, msgID: msgID)
                return try await StepRepository.hydrateAndClaim(harness.admin, [request], stamp: stamp, queues: statements)[0].claim
            }
            // No lease at all.
            #expect(try await attempt("dead_one", ClaimStamp(worker: worker)) == .leaseLapsed)
            // A lease of 4 s renewed 3.1 s ago: in its last quarter.
            try await harness.holdLease(worker, for: .seconds(4))
            try await harness.admin.query(
                """
                UPDATE tasker.worker_leases SET renewed_at = renewed_at - interval '3.1 seconds',
                       expires_at = expires_at - interval '3.1 seconds' WHERE worker_uuid = $1
                """, [worker])
            #expect(try await attempt("dead_two", ClaimStamp(worker: worker)) == .leaseLapsed)
            for name in ["dead_one", "dead_two"] {
                #expect(try await harness.transitions(task[name]).map(\.to) == ["pending", "enqueued"], "\(name)")
                let attempts: Int = try await harness.admin.query(
                    "SELECT COALESCE(attempts, 0) AS n FROM tasker.workflow_steps WHERE workflow_step_uuid = $1", [task[name]]
                )[0].decode("n")
                #expect(attempts == 0, "\(name)")
            }
            #expect(try await harness.queuedIDs().count == 2, "the refused claims archived nothing")
            #expect(try await attempt("upstream", ClaimStamp(worker: nil)) == .claimed(attempts: 1))
            try await harness.holdLease(worker)
            #expect(try await attempt("live", ClaimStamp(worker: worker)) == .claimed(attempts: 1))
        }
    }
}
