import Foundation
import Synchronization
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Burst claims (`processing.claim_notified_bursts`): notified messages of a queue that arrive while a
/// claim of that queue is in flight are read and claimed together after it, in one transaction; each
/// step still runs once, a failed claim loses nothing, and shutdown claims nothing that waits.
///
/// Every test holds the first step's claim in flight with a row lock on its `enqueued` transition,
/// taken AFTER that transition was written (the claim waits for it; the harness's own writes never do:
/// the earlier version of this suite locked the row before `enqueue` wrote the transition, so the
/// harness's own connection waited for the lock forever and the test process hung). The locker gives
/// its lock up by itself after 30 s idle, so a failing test never leaves it held.
@Suite("Notified bursts", .timeLimit(.minutes(2)))
struct NotifiedBurstTests {
    static let yaml = """
        name: bursts
        namespace_name: bursts
        version: 1.0.0
        steps:
          - name: one
            handler:
              callable: tasker.noop
        """
    /// Steps notified one by one while the first step's claim is held.
    static let burst = 4

    /// With bursts, the steps notified during the held claim are claimed in ONE transaction (their
    /// `in_progress` transitions share one `created_at`, `NOW()` of the claim's transaction) and
    /// counted as batched; without, each in its own.
    @Test(arguments: [true, false])
    func messagesNotifiedDuringAClaimAreClaimedTogether(_ bursts: Bool) async throws {
        try await withTestDatabase { db in
            let scene = try await BurstScene.make(db, bursts: bursts)
            try await scene.holdFirstClaimAndNotifyTheRest()
            if bursts {
                try await scene.waitForPending(Self.burst)
            } else {
                for task in scene.rest { try await scene.harness.waitForState(task["one"], ["enqueued_for_orchestration"]) }
            }
            try await scene.locker.query("ROLLBACK")
            #expect(await scene.harness.waitForAllSteps(["enqueued_for_orchestration"], timeout: .seconds(30)))
            let batched = scene.worker.daemon.statistics.snapshot.claimsBatched
            #expect(await scene.worker.stop(within: .seconds(30)))
            #expect(batched == (bursts ? Self.burst : 0))
            let transactions = try await scene.claimTransactions(of: scene.rest)
            #expect(bursts ? transactions == 1 : transactions > 1)
            try await scene.expectEachClaimedOnce(scene.tasks)
            #expect(try await scene.harness.queuedIDs().isEmpty)
            await scene.locker.close()
        }
    }

    /// The claim in flight breaks (its connection is terminated while it waits): the claimer still
    /// claims the burst that waited behind it, together, and the broken claim's message is read
    /// again and claimed once the lock is gone. Every step claimed exactly once, none lost.
    @Test func aBurstIsClaimedWhenTheClaimBeforeItFails() async throws {
        try await withTestDatabase { db in
            let scene = try await BurstScene.make(db, bursts: true)
            try await scene.holdFirstClaimAndNotifyTheRest()
            try await scene.waitForPending(Self.burst)
            try await scene.harness.admin.query(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE datname = current_database() AND application_name = 'tasker-worker' AND wait_event_type = 'Lock'
                """)
            for task in scene.rest { try await scene.harness.waitForState(task["one"], ["enqueued_for_orchestration"]) }
            #expect(scene.worker.daemon.statistics.snapshot.claimsBatched == Self.burst)
            #expect(try await scene.harness.state(scene.tasks[0]["one"]) == "enqueued")
            try await scene.locker.query("ROLLBACK")
            #expect(await scene.harness.waitForAllSteps(["enqueued_for_orchestration"], timeout: .seconds(30)))
            #expect(await scene.worker.stop(within: .seconds(30)))
            #expect(try await scene.claimTransactions(of: scene.rest) == 1)
            try await scene.expectEachClaimedOnce(scene.tasks)
            #expect(try await scene.harness.queuedIDs().isEmpty)
            await scene.locker.close()
        }
    }

    /// Shutdown begins while the burst waits behind the held claim: the worker stops (no hang), the
    /// claim in flight finishes or fails, and nothing of the burst is read or claimed: its messages
    /// stay queued, never read (`read_ct` 0), and no step is left `in_progress`.
    @Test func shutdownDuringABurstClaimsNothingThatWaits() async throws {
        try await withTestDatabase { db in
            let scene = try await BurstScene.make(db, bursts: true)
            try await scene.holdFirstClaimAndNotifyTheRest()
            try await scene.waitForPending(Self.burst)
            let worker = scene.worker
            let stopped = Task { await worker.stop(within: .seconds(60)) }
            try await waitUntil(timeout: .seconds(10)) { scene.worker.daemon.runtime.eventSystem.intakeOpen == false }
            try await scene.locker.query("ROLLBACK")
            #expect(await stopped.value)
            let summaries = try await scene.harness.stepSummaries()
            #expect(summaries.values.allSatisfy { $0.state != "in_progress" }, "\(summaries)")
            for task in scene.rest { #expect(try await scene.harness.state(task["one"]) == "enqueued") }
            let unread: Int = try await scene.harness.admin.query(
                "SELECT count(*) AS n FROM pgmq.q_worker_bursts_queue WHERE read_ct = 0")[0].decode("n")
            #expect(unread == Self.burst)
            await scene.locker.close()
        }
    }
}

/// A worker (EventDrivenOnly, no poller) and `1 + NotifiedBurstTests.burst` single-step tasks.
private struct BurstScene {
    let harness: PipelineHarness
    let worker: PipelineHarness.RunningWorker
    let tasks: [PipelineHarness.SeededTask]
    let locker: PostgresConnection
    var rest: ArraySlice<PipelineHarness.SeededTask> { tasks.dropFirst() }

    static func make(_ db: TestDatabase, bursts: Bool) async throws -> BurstScene {
        let harness = try await PipelineHarness.make(db, yaml: NotifiedBurstTests.yaml)
        var configuration = harness.configuration(mode: .eventDrivenOnly)
        configuration.worker.eventSystems.worker.processing.claimNotifiedBursts = bursts
        configuration.worker.eventSystems.worker.timing.visibilityTimeoutSeconds = 1
        let worker = harness.startWorker(HandlerRegistry.withBuiltIns(), configuration: configuration)
        try await harness.waitForWorkersReady(1, mode: .eventDrivenOnly)
        let tasks = try await harness.createSingleStepTasks(count: 1 + NotifiedBurstTests.burst, step: "one")
        let locker = try await db.connect(applicationName: "tasker-test-locker")
        try await locker.query("SET idle_in_transaction_session_timeout = '30s'")
        return BurstScene(harness: harness, worker: worker, tasks: tasks, locker: locker)
    }

    /// The first step enqueued and its transition locked before its message is sent, so its claim
    /// waits; then the others enqueued one by one (one notification each).
    func holdFirstClaimAndNotifyTheRest() async throws {
        let first = tasks[0]
        try await harness.transition(first["one"], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
        try await locker.query("BEGIN")
        try await locker.query(
            "SELECT 1 FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1 AND most_recent FOR UPDATE",
            [first["one"]])
        try await PGMQ.sendWithNotify(
            harness.admin, queue: QueueNames.workerQueue(namespace: harness.namespace),
            message: try PostgresJSON(StepMessage(taskUUID: first.taskUUID, stepUUID: first["one"], correlationID: first.correlationID)))
        try await waitUntil(timeout: .seconds(10)) {
            let waiting: Int = try await harness.admin.query(
                """
                SELECT count(*) AS n FROM pg_stat_activity
                 WHERE datname = current_database() AND application_name = 'tasker-worker' AND wait_event_type = 'Lock'
                """)[0].decode("n")
            return waiting > 0
        }
        for task in rest { try await harness.enqueue(task, "one") }
    }

    /// Waits until `count` notified ids wait for the queue's claimer.
    func waitForPending(_ count: Int) async throws {
        let intake = try #require(worker.daemon.runtime.eventSystem.intake as? PGMQIntake)
        let queue = QueueNames.workerQueue(namespace: harness.namespace)
        try await waitUntil(timeout: .seconds(10)) { intake.bursts.withLock { $0[queue]?.pending.count ?? 0 } == count }
    }

    /// Transactions that inserted the `in_progress` transitions of `tasks`: distinct `created_at`
    /// (`NOW()`, the transaction's start; not `xmin`, which the completion's update replaces).
    func claimTransactions(of tasks: ArraySlice<PipelineHarness.SeededTask>) async throws -> Int {
        let ids = tasks.map { "'\($0["one"].uuidString)'" }.joined(separator: ",")
        return try await harness.admin.query(
            """
            SELECT count(DISTINCT created_at) AS n FROM tasker.workflow_step_transitions
             WHERE to_state = 'in_progress' AND workflow_step_uuid IN (\(ids))
            """)[0].decode("n")
    }

    func expectEachClaimedOnce(_ tasks: [PipelineHarness.SeededTask]) async throws {
        for task in tasks {
            #expect(try await harness.transitions(task["one"]).filter { $0.to == "in_progress" }.count == 1)
        }
    }
}
