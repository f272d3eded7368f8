import Foundation
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration

#if canImport(Glibc)
import Glibc
import TaskerStore
#endif

/// Issue #26, items 5 and 9: notifications are hints from anyone. The orchestration took every id
/// of a forged `batch_ready` (3,954 in one; 500 such cost it 28 s of CPU); now the worker and the
/// orchestration share one bounded intake (`NotificationTriage`, `NotificationIntake`; their
/// rules are tested without a database in TaskerModelTests and TaskerMessagingTests). And the bodies a LISTENer can
/// read can be turned off (`scripts/sql/notify-without-payloads.sql`).
@Suite("Forged notifications", .timeLimit(.minutes(4)))
struct ForgedNotificationTests {
    static func batchReady(_ queue: String, ids: ClosedRange<Int>) -> String {
        HostileFixtures.batchReady(queue, ids: ids)
    }

    /// 300 forged `batch_ready` notifications of 1,300 ids each on the orchestration's channel: it
    /// reads no message by id for them (before: 390,000 reads by id), rejects 300 naming another
    /// queue, and still turns a real task request sent after them into a task. Prints the test
    /// process's CPU per forged notification (an upper bound: other suites run in the same process).
    @Test func theOrchestrationTakesForgedBatchesAsOneQueueReadEach() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let orchestration = harness.startOrchestration()
            let service = orchestration.service
            let listener = try await db.connect()
            let channel = QueueNames.readyChannel(namespace: "orchestration")
            try await harness.waitUntilListening(service, via: listener)
            let probes = service.statistics.notificationsRejected
            let readsBefore = service.statistics.notifiedMessageReads
            let forged = 300
            let before = Self.processCPU()
            for index in 0..<forged {
                try await listener.query(
                    "SELECT pg_notify($1, $2)",
                    [channel, Self.batchReady(QueueNames.stepResults, ids: (index + 1)...(index + 1_300))])
                try await listener.query(
                    "SELECT pg_notify($1, $2)", [channel, Self.batchReady("worker_other_queue", ids: 1...5)])
            }
            let tasksBefore: Int = try await harness.admin.query("SELECT count(*)::integer AS n FROM tasker.tasks")[0].decode("n")
            let request = TaskRequestMessage(taskRequest: OrchestrationHarness.request("linear_workflow", ["number": 2]))
            try await PGMQ.sendWithNotify(harness.admin, queue: QueueNames.taskRequests, message: try PostgresJSON(request))
            try await waitUntil(timeout: .seconds(60)) {
                let n: Int = try await harness.admin.query("SELECT count(*)::integer AS n FROM tasker.tasks")[0].decode("n")
                return n > tasksBefore && service.statistics.notificationsRejected >= probes + forged
            }
            let cpu = Self.processCPU() - before
            print(
                "[figures] orchestration, forged batch_ready of 1,300 ids: "
                    + "\(String(format: "%.3f", cpu * 1000 / Double(forged * 2))) ms of test-process CPU per notification "
                    + "(\(forged * 2) notifications), reads by id: \(service.statistics.notifiedMessageReads - readsBefore)")
            try await orchestration.stop()
            #expect(service.statistics.notificationsRejected - probes == forged)
            // Only the real request (and what it set off) was read by id.
            let reads = service.statistics.notifiedMessageReads - readsBefore
            #expect(reads <= 10, "\(reads) reads by id")
        }
    }

    /// 300 unreadable notifications on the orchestration's channel cost it at most one pass over its
    /// queues a second besides its poll ticks (`CatchUpReason.delay`, the worker's rule; before, each
    /// was a pass of its own: 300 passes, 900 reads), and a real message behind them is still found.
    @Test func theOrchestrationReadsForUnreadableNotificationsAtMostOnceASecond() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let pollInterval = Duration.seconds(2)
            let orchestration = harness.startOrchestration { $0.pollInterval = pollInterval }
            let service = orchestration.service
            let listener = try await db.connect()
            let channel = QueueNames.readyChannel(namespace: "orchestration")
            try await harness.waitUntilListening(service, via: listener)
            let rejectedBefore = service.statistics.notificationsRejected
            let passesBefore = service.statistics.queueReadPasses
            let started = ContinuousClock.now
            let forged = 300
            for _ in 0..<forged { try await listener.query("SELECT pg_notify($1, $2)", [channel, "{not json"]) }
            try await waitUntil(timeout: .seconds(60)) {
                service.statistics.notificationsRejected >= rejectedBefore + forged
            }
            // The catch-up they asked for, a second later, finds a message sent without a notification.
            let request = TaskRequestMessage(taskRequest: OrchestrationHarness.request("linear_workflow", ["number": 2]))
            let tasksBefore: Int = try await harness.admin.query("SELECT count(*)::integer AS n FROM tasker.tasks")[0].decode("n")
            try await harness.admin.query(
                "SELECT pgmq.send($1::text, $2::jsonb)", [QueueNames.taskRequests, try PostgresJSON(request)])
            for _ in 0..<3 { try await listener.query("SELECT pg_notify($1, $2)", [channel, "{not json"]) }
            try await waitUntil(timeout: .seconds(30)) {
                let n: Int = try await harness.admin.query("SELECT count(*)::integer AS n FROM tasker.tasks")[0].decode("n")
                return n > tasksBefore
            }
            let elapsed = started.duration(to: .now)
            let passes = service.statistics.queueReadPasses - passesBefore
            try await orchestration.stop()
            // One catch-up per second of the run and one pass per poll tick, each rounded up.
            let seconds = Int(elapsed.components.seconds) + 2
            let bound = seconds + seconds / 2 + 2
            #expect(passes <= bound, "\(passes) passes over the queues in \(elapsed) for \(forged + 3) unreadable notifications")
        }
    }

    /// With `scripts/sql/notify-without-payloads.sql` applied, a notification carries no message:
    /// only the queue and the id.
    @Test func notificationsCanBeSentWithoutTheirMessages() async throws {
        try await withTestDatabase { db in
            let admin = try await db.connect()
            let script = try String(
                contentsOfFile: TestEnvironment.repositoryRoot + "/scripts/sql/notify-without-payloads.sql", encoding: .utf8)
            let listener = try await db.connect()
            try await listener.listen("pgmq_message_ready.orchestration")
            try await PGMQ.create(admin, queue: QueueNames.taskRequests)
            let secret: JSONValue = ["card": "4111 1111 1111 1111"]
            try await PGMQ.sendWithNotify(admin, queue: QueueNames.taskRequests, message: try PostgresJSON(secret))
            let inline = try await listener.waitForNotifications(timeout: .seconds(5))
            #expect(inline.first?.payload.contains("4111") == true, "upstream's default embeds small messages")
            try await admin.execute(script)
            let fresh = try await db.connect()  // a new session: the IMMUTABLE threshold is not cached
            try await PGMQ.sendWithNotify(fresh, queue: QueueNames.taskRequests, message: try PostgresJSON(secret))
            let bare = try await listener.waitForNotifications(timeout: .seconds(5))
            let payload = try #require(bare.first?.payload)
            #expect(!payload.contains("4111"), "\(payload)")
            guard case .messageReady(let queue, _) = try QueueNotification.parse(payload) else {
                Issue.record("not message_ready: \(payload)")
                return
            }
            #expect(queue == QueueNames.taskRequests)
        }
    }

    /// User + system CPU seconds of this process so far.
    static func processCPU() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
    }
}
