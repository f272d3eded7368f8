import Foundation
import TaskerStepModel

/// What a listener does with one `pgmq_message_ready.*` notification: the one intake rule of the
/// worker and the orchestration, so every hardening applies to both.
///
/// Notifications are hints from anyone: any role that can connect may `pg_notify` any payload on any
/// channel. So the cost of one notification is bounded whatever it says:
/// - it is taken only for a queue its channel announces (`channelQueues`); anything else is rejected;
/// - a payload is parsed only when it fits in what `pg_notify` can carry (`maxPayloadBytes`) and its
///   JSON nesting is within `UntrustedJSON.maximumDepth` (checked before decoding, in linear time);
/// - at most `maxMessageIDsPerNotification` distinct ids are read by id; a `batch_ready` naming more
///   becomes one read of the queue (which the caller bounds by its own batch size and coalesces), so
///   3,954 forged ids cost one queue read, not 3,954 round trips;
/// - a body embedded in a notification is never acted on: the message is read by id and judged by
///   its stored body.
public enum NotificationTriage {
    /// Most message ids read by id for one notification.
    public static let maxMessageIDsPerNotification = 10
    /// PostgreSQL refuses `pg_notify` payloads of 8,000 bytes or more; a longer one cannot be real.
    public static let maxPayloadBytes = 8_000

    /// The decision for one notification.
    public enum Decision: Sendable, Equatable {
        /// Read these messages of `queue` by id (distinct, at most `maxMessageIDsPerNotification`).
        case readByID(queue: String, msgIDs: [Int64])
        /// Read `queue` once, for `announced` messages (more than can be read by id).
        case readQueue(queue: String, announced: Int)
        /// Read every queue soon: messages stand behind the notification but it does not say which
        /// (`tasker.pgmq_send_batch_with_notify` cut a long `batch_ready`). Not counted as rejected.
        case catchUp
        /// Not taken: `reason` says why (counted and logged, at a bounded rate, by the caller).
        /// `catchUp`: a real message may stand behind it (e.g. a body nested too deep to decode),
        /// so the queues are read soon (coalesced by the caller).
        case rejected(reason: String, catchUp: Bool)
        /// Nothing to do (`queue_created`).
        case none
    }

    /// The decision for `payload`, received on a channel that announces `channelQueues`.
    public static func triage(payload: String, channelQueues: Set<String>) -> Decision {
        guard payload.utf8.count < maxPayloadBytes else {
            return .rejected(reason: "payload of \(payload.utf8.count) bytes, more than pg_notify can send", catchUp: false)
        }
        let notification: QueueNotification
        do {
            notification = try QueueNotification.parse(payload)
        } catch {
            if isTruncatedBatchReady(payload) { return .catchUp }
            return .rejected(reason: "\(error)", catchUp: true)
        }
        guard channelQueues.contains(notification.queue) else {
            return .rejected(
                reason: "it names queue \(notification.queue.prefix(100)), which its channel does not announce",
                catchUp: false)
        }
        switch notification {
        case .messageWithPayload(let queue, let msgID, _), .messageReady(let queue, let msgID):
            return .readByID(queue: queue, msgIDs: [msgID])
        case .batchReady(let queue, let msgIDs):
            var seen: Set<Int64> = []
            var distinct: [Int64] = []
            for id in msgIDs where seen.insert(id).inserted {
                distinct.append(id)
                if distinct.count > maxMessageIDsPerNotification {
                    return .readQueue(queue: queue, announced: msgIDs.count)
                }
            }
            return distinct.isEmpty ? .none : .readByID(queue: queue, msgIDs: distinct)
        case .queueCreated:
            return .none
        }
    }

    /// Whether `payload` is a `batch_ready` that `tasker.pgmq_send_batch_with_notify` cut to 7,790
    /// characters and closed with `...}` (migrations/0003): not forged, but only a queue read finds
    /// its messages (ids and queue name lost).
    public static func isTruncatedBatchReady(_ payload: String) -> Bool {
        payload.hasSuffix("...}") && payload.utf8.count <= 7_800
            && payload.replacingOccurrences(of: " ", with: "").hasPrefix(#"{"event_type":"batch_ready""#)
    }
}
