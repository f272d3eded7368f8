import Foundation
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Burst claims: notified messages that arrive while a claim of their queue is in flight are read
/// and claimed together after it, in one transaction; each step still runs once.
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

    /// The first step's claim is held up on a row lock; three more steps are notified one by one
    /// meanwhile. Once the lock goes, the three are claimed as one batch (without bursts, each
    /// would be claimed on its own and `claimsBatched` would stay 0).
    @Test(arguments: [true, false])
    func messagesNotifiedDuringAClaimAreClaimedTogether(_ bursts: Bool) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            var configuration = harness.configuration(mode: .eventDrivenOnly)
            configuration.worker.eventSystems.worker.processing.claimNotifiedBursts = bursts
            let worker = harness.startWorker(HandlerRegistry.withBuiltIns(), configuration: configuration)
            try await harness.waitForWorkersReady(1, mode: .eventDrivenOnly)
            let tasks = try await harness.createSingleStepTasks(count: 4, step: "one")
            let locker = try await db.connect(applicationName: "tasker-test-locker")
            try await locker.query("BEGIN")
            try await locker.query(
                "SELECT 1 FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1 AND most_recent FOR UPDATE",
                [tasks[0]["one"]])
            try await harness.enqueue(tasks[0], "one")
            // The claim of the first step is waiting for the lock.
            try await waitUntil(timeout: .seconds(10)) {
                let waiting: Int = try await harness.admin.query(
                    """
                    SELECT count(*) AS n FROM pg_stat_activity
                     WHERE datname = current_database() AND application_name = 'tasker-worker' AND wait_event_type = 'Lock'
                    """)[0].decode("n")
                return waiting > 0
            }
            for task in tasks.dropFirst() { try await harness.enqueue(task, "one") }
            try await Task.sleep(for: .milliseconds(300))  // the notifications have arrived
            try await locker.query("ROLLBACK")
            #expect(await harness.waitForAllSteps(["enqueued_for_orchestration"], timeout: .seconds(30)))
            let batched = worker.daemon.statistics.snapshot.claimsBatched
            try await worker.stop()
            #expect(batched == (bursts ? 3 : 0))
            for task in tasks {
                #expect(try await harness.transitions(task["one"]).filter { $0.to == "in_progress" }.count == 1)
            }
            #expect(try await harness.queuedIDs().isEmpty)
        }
    }
}
