import TaskerModel
import TaskerTestSupport
import Testing

/// `NotificationTriage`, the one rule of the worker and the orchestration for a notification (the
/// forged notifications against real processes: `ForgedNotificationTests` in TaskerSystemTests).
@Suite("Notification triage")
struct NotificationTriageTests {
    static let channelQueues: Set<String> = ["worker_a_queue"]

    @Test func theTriageBoundsWhatOneNotificationCosts() {
        typealias T = NotificationTriage
        // Up to 10 distinct ids: read by id (duplicates once).
        #expect(
            T.triage(payload: HostileFixtures.batchReady("worker_a_queue", ids: 1...10), channelQueues: Self.channelQueues)
                == .readByID(queue: "worker_a_queue", msgIDs: Array(1...10)))
        let repeated = #"{"event_type":"batch_ready","queue_name":"worker_a_queue","msg_ids":[7,7,7,7,7,7,7,7,7,7,7,7,7]}"#
        #expect(T.triage(payload: repeated, channelQueues: Self.channelQueues) == .readByID(queue: "worker_a_queue", msgIDs: [7]))
        // More: one queue read, whatever the count.
        #expect(
            T.triage(payload: HostileFixtures.batchReady("worker_a_queue", ids: 1...1_300), channelQueues: Self.channelQueues)
                == .readQueue(queue: "worker_a_queue", announced: 1_300))
        // Another queue than the channel's: rejected, nothing read.
        guard
            case .rejected(_, catchUp: false) = T.triage(
                payload: HostileFixtures.batchReady("orchestration_step_results", ids: 1...3), channelQueues: Self.channelQueues)
        else { return #expect(Bool(false), "a queue the channel does not announce was taken") }
        // Not a notification (too deep, not JSON, too long): rejected, the queues read soon.
        let deep =
            #"{"event_type":"message_ready","queue_name":"worker_a_queue","msg_id":1,"x":"#
            + String(repeating: "[", count: 400) + String(repeating: "]", count: 400) + "}"
        for payload in [deep, "{not json", String(repeating: " ", count: 9_000)] {
            switch T.triage(payload: payload, channelQueues: Self.channelQueues) {
            case .rejected: break
            default: Issue.record("taken: \(payload.prefix(60))")
            }
        }
        // A batch_ready cut by pgmq_send_batch_with_notify: read the queues.
        let cut = String(HostileFixtures.batchReady("worker_a_queue", ids: 1...2_000).prefix(7_790)) + "...}"
        #expect(T.triage(payload: cut, channelQueues: Self.channelQueues) == .catchUp)
    }
}
