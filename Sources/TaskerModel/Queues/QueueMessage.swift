import Foundation
import TaskerStepModel

/// A message read from a PGMQ queue (read by column name: PGMQ 1.13 added `last_read_at`).
public struct QueueMessage: Sendable, Equatable {
    public let queue: String
    public let msgID: Int64
    public let readCount: Int
    /// The message body; `.null` when it is missing or could not be decoded (`bodyError` says why).
    public let message: JSONValue
    /// Why the body could not be decoded (e.g. JSON nested deeper than the decoder's limit, which
    /// `jsonb` accepts); nil when it was. Such a message is poison, but it must not fail the read
    /// of the messages read with it.
    public let bodyError: String?

    public init(queue: String, msgID: Int64, readCount: Int, message: JSONValue, bodyError: String? = nil) {
        self.queue = queue
        self.msgID = msgID
        self.readCount = readCount
        self.message = message
        self.bodyError = bodyError
    }
}

/// Queue names as Tasker builds them.
public enum QueueNames {
    public static let stepResults = "orchestration_step_results"
    public static let taskRequests = "orchestration_task_requests"
    public static let taskFinalizations = "orchestration_task_finalizations"

    /// `worker_<namespace>_queue`.
    public static func workerQueue(namespace: String) -> String { "worker_\(namespace)_queue" }
    /// `worker_<namespace>_queue` → `<namespace>` (the inverse of `workerQueue`); any other name is returned as is.
    public static func namespace(ofWorkerQueue queue: String) -> String {
        guard queue.hasPrefix("worker_"), queue.hasSuffix("_queue"), queue.count > 13 else { return queue }
        return String(queue.dropFirst(7).dropLast(6))
    }
    /// `<namespace>_domain_events`.
    public static func domainEvents(namespace: String) -> String { "\(namespace)_domain_events" }
    /// The channel `pgmq_send_with_notify` notifies for a worker namespace.
    public static func readyChannel(namespace: String) -> String { "pgmq_message_ready.\(namespace)" }
    /// The worker queue whose messages a ready channel announces (the inverse of `readyChannel`);
    /// any other channel name is returned as is.
    public static func queue(ofChannel channel: String) -> String {
        let prefix = "pgmq_message_ready."
        guard channel.hasPrefix(prefix), channel.count > prefix.count else { return channel }
        return workerQueue(namespace: String(channel.dropFirst(prefix.count)))
    }
}
