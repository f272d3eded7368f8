import Foundation
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration

/// The orchestration's listener drops events when its buffer is full; `NotificationIntake` counts
/// them and answers with a read of the queues, as it does for the worker
/// (`NotificationIntakeTests.notificationsDroppedByAFullBufferAreCountedAndTheirMessagesStillRun`).
@Suite("Orchestration: dropped notifications", .timeLimit(.minutes(2)))
struct OrchestrationDroppedNotificationTests {
    /// 40 task requests in one commit (40 notifications at once) into a listener buffer of one, with
    /// the fallback poll an hour away and nothing sent after them: only the catch-up read the drops
    /// ask for finds the requests their notifications announced.
    @Test func droppedNotificationsAreCountedAndTheirMessagesStillProcessed() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let orchestration = harness.startOrchestration { settings in
                settings.listenerBufferSize = 1
                settings.pollInterval = .seconds(3_600)
            }
            let service = orchestration.service
            let probe = try await db.connect()
            try await harness.waitUntilListening(service, via: probe)
            let count = "SELECT count(*)::integer AS n FROM tasker.tasks"
            let before: Int = try await harness.admin.query(count)[0].decode("n")
            let requests = 40
            // Distinct contexts: requests of the same identity would be one task.
            let messages = try (0..<requests).map { number in
                try PostgresJSON(
                    TaskRequestMessage(taskRequest: OrchestrationHarness.request("linear_workflow", ["number": .int(Int64(number))])))
            }
            try await harness.admin.transaction { c in
                for message in messages { _ = try PGMQ.sendWithNotify(c, queue: QueueNames.taskRequests, message: message) }
            }
            // No event follows the burst: the event that displaced the last dropped one carries the
            // count (`PostgresListener.droppedEvents` is read under the lock its yield held).
            try await waitUntil(timeout: .seconds(60)) {
                let n: Int = try await harness.admin.query(count)[0].decode("n")
                return n == before + requests
            }
            try await orchestration.stop()
            await probe.close()
            #expect(service.statistics.notificationsDropped > 0)
            let left: Int = try await harness.admin.query(
                "SELECT count(*)::integer AS n FROM pgmq.q_\(QueueNames.taskRequests)")[0].decode("n")
            #expect(left == 0, "\(left) task requests left in the queue")
        }
    }
}
