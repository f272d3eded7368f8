import Logging
import Synchronization
import TaskerMessaging
import TaskerModel
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerPostgres

/// `NotificationIntake`, the listener side of the worker's and the orchestration's PGMQ intakes,
/// without a database: one listener event in, at most one signal out, rejected and dropped
/// notifications counted through the caller's hooks (the real listener and forged notifications:
/// `NotificationIntakeTests` and `ForgedNotificationTests` in TaskerSystemTests).
@Suite("Notification intake signals")
struct NotificationIntakeSignalTests {
    /// Calls of the intake's counting hooks.
    final class Counts: Sendable {
        let rejectedChannels = Mutex<[String]>([])
        let dropped = Mutex<[Int]>([])
    }

    static let workerChannel = QueueNames.readyChannel(namespace: "a")
    static let orchestrationChannel = QueueNames.readyChannel(namespace: "orchestration")

    static func intake(_ counts: Counts) -> NotificationIntake {
        NotificationIntake(
            channelQueues: [
                workerChannel: [QueueNames.workerQueue(namespace: "a")],
                orchestrationChannel: [QueueNames.stepResults, QueueNames.taskRequests],
            ],
            logger: Logger(label: "test.notification-intake"),
            onRejected: { channel in counts.rejectedChannels.withLock { $0.append(channel) } },
            onDropped: { count in counts.dropped.withLock { $0.append(count) } })
    }

    static func note(_ channel: String, _ payload: String) -> ListenerEvent {
        .notification(PostgresNotification(channel: channel, payload: payload, backendPID: 1))
    }

    static func messageReady(_ queue: String, _ id: Int) -> String {
        #"{"event_type":"message_ready","queue_name":"\#(queue)","msg_id":\#(id)}"#
    }

    @Test func notificationsForAnnouncedQueuesBecomeReads() {
        let counts = Counts()
        let intake = Self.intake(counts)
        #expect(intake.channels == [Self.orchestrationChannel, Self.workerChannel].sorted())
        #expect(
            intake.signal(for: Self.note(Self.workerChannel, Self.messageReady("worker_a_queue", 7)), droppedTotal: 0)
                == .readByID(queue: "worker_a_queue", msgIDs: [7]))
        // The orchestration's channel announces several queues; each is taken on it.
        #expect(
            intake.signal(
                for: Self.note(Self.orchestrationChannel, HostileFixtures.batchReady(QueueNames.taskRequests, ids: 1...3)),
                droppedTotal: 0) == .readByID(queue: QueueNames.taskRequests, msgIDs: [1, 2, 3]))
        #expect(
            intake.signal(
                for: Self.note(Self.workerChannel, HostileFixtures.batchReady("worker_a_queue", ids: 1...500)), droppedTotal: 0)
                == .readQueue(queue: "worker_a_queue", announced: 500))
        #expect(intake.signal(for: .connected(isReconnect: true), droppedTotal: 0) == .catchUp(.connected))
        #expect(counts.rejectedChannels.withLock { $0 }.isEmpty)
    }

    /// What a channel does not announce, or what is not a notification, is counted with its channel
    /// and gives no read by id; an unreadable one asks for a catch-up (a real message may stand
    /// behind it), a cut `batch_ready` too, without being counted as rejected.
    @Test func forgedNotificationsAreCountedAndReadNothingByID() {
        let counts = Counts()
        let intake = Self.intake(counts)
        // Another queue than the channel's own, a channel not listened to, a queue of another channel.
        #expect(intake.signal(for: Self.note(Self.workerChannel, Self.messageReady("worker_b_queue", 1)), droppedTotal: 0) == nil)
        #expect(intake.signal(for: Self.note("pgmq_message_ready.b", Self.messageReady("worker_b_queue", 1)), droppedTotal: 0) == nil)
        #expect(
            intake.signal(for: Self.note(Self.workerChannel, Self.messageReady(QueueNames.stepResults, 1)), droppedTotal: 0) == nil)
        #expect(intake.signal(for: Self.note(Self.workerChannel, "{not json"), droppedTotal: 0) == .catchUp(.unreadable))
        #expect(
            counts.rejectedChannels.withLock { $0 }
                == [Self.workerChannel, "pgmq_message_ready.b", Self.workerChannel, Self.workerChannel])
        let cut = String(HostileFixtures.batchReady("worker_a_queue", ids: 1...2_000).prefix(7_790)) + "...}"
        #expect(intake.signal(for: Self.note(Self.workerChannel, cut), droppedTotal: 0) == .catchUp(.truncatedBatch))
        #expect(counts.rejectedChannels.withLock { $0.count } == 4)
    }

    /// Events dropped by a full listener buffer are counted once each and answered with a catch-up
    /// read (which also finds the message of the event that revealed them).
    @Test func droppedEventsAreCountedOnceAndReadFor() {
        let counts = Counts()
        let intake = Self.intake(counts)
        let event = Self.note(Self.workerChannel, Self.messageReady("worker_a_queue", 9))
        #expect(intake.signal(for: event, droppedTotal: 3) == .catchUp(.dropped))
        #expect(intake.signal(for: event, droppedTotal: 3) == .readByID(queue: "worker_a_queue", msgIDs: [9]))
        #expect(intake.signal(for: .connected(isReconnect: false), droppedTotal: 5) == .catchUp(.dropped))
        #expect(counts.dropped.withLock { $0 } == [3, 2])
    }
}
