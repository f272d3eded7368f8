import Foundation
import TaskerStepModel
import TaskerText

/// A notification from `tasker.pgmq_send_with_notify` / `pgmq_send_batch_with_notify` on channel
/// `pgmq_message_ready.<ns>` (payloads as upstream's `crates/tasker-pgmq/src/events.rs`).
public enum QueueNotification: Sendable, Equatable {
    /// The message fits in the payload (< 7000 characters): process it without reading the queue.
    case messageWithPayload(queue: String, msgID: Int64, message: JSONValue)
    /// Only the id: read it with `pgmq_read_specific_message`.
    case messageReady(queue: String, msgID: Int64)
    /// Several ids sent at once: read every one of them.
    case batchReady(queue: String, msgIDs: [Int64])
    /// `pgmq_queue_created`: a queue appeared.
    case queueCreated(queue: String)

    public var queue: String {
        switch self {
        case .messageWithPayload(let queue, _, _), .messageReady(let queue, _), .batchReady(let queue, _),
            .queueCreated(let queue):
            return queue
        }
    }

    /// Parses a payload; the error names what is wrong with it.
    public static func parse(_ payload: String) throws(QueueNotificationError) -> QueueNotification {
        let value: JSONValue
        do {
            value = try UntrustedJSON.decode(JSONValue.self, from: payload, what: "the notification payload")
        } catch {
            throw QueueNotificationError("not JSON: \(error)", payload: payload)
        }
        guard let type = value["event_type"]?.stringValue else {
            throw QueueNotificationError("no event_type", payload: payload)
        }
        guard let queue = value["queue_name"]?.stringValue else {
            throw QueueNotificationError("no queue_name", payload: payload)
        }
        func msgID() throws(QueueNotificationError) -> Int64 {
            guard let id = value["msg_id"]?.intValue else { throw QueueNotificationError("no msg_id", payload: payload) }
            return Int64(id)
        }
        switch type {
        case "message_with_payload":
            // A body of JSON `null` (a poison message, but a real one) is announced the same way:
            // it is read by id like `message_ready`, so that it is archived rather than ignored.
            guard let message = value["message"], !message.isNull else {
                return .messageReady(queue: queue, msgID: try msgID())
            }
            return .messageWithPayload(queue: queue, msgID: try msgID(), message: message)
        case "message_ready":
            return .messageReady(queue: queue, msgID: try msgID())
        case "batch_ready":
            guard case .array(let ids)? = value["msg_ids"] else {
                throw QueueNotificationError("batch_ready without msg_ids", payload: payload)
            }
            return .batchReady(queue: queue, msgIDs: ids.compactMap { $0.intValue.map(Int64.init) })
        case "queue_created":
            return .queueCreated(queue: queue)
        default:
            throw QueueNotificationError("unknown event_type \(type)", payload: payload)
        }
    }
}

public struct QueueNotificationError: Error, CustomStringConvertible {
    public let reason: String
    public let payload: String
    init(_ reason: String, payload: String) {
        self.reason = reason
        self.payload = String(payload.prefix(300))
    }
    public var description: String { "bad queue notification (\(reason)): \(payload)" }
}
