#if DEBUG
import TaskerModel

/// A NOTIFY payload of `pgmq_message_ready.<ns>` (any role that can connect may send one) →
/// `QueueNotification.parse`, the worker's and the orchestration's intake. Contract: an embedded
/// message is no deeper than the limit; never more ids than the payload holds (each takes 2 bytes).
public enum QueueNotificationCheck {
    /// Checks one input against the contract above.
    public static func check(_ bytes: [UInt8]) {
        let payload = String(decoding: bytes, as: UTF8.self)
        guard let notification = try? QueueNotification.parse(payload) else { return }
        switch notification {
        case .messageWithPayload(_, _, let message):
            let depth = JSONDepthOracle.depth(of: message)
            FuzzContract.require(depth <= JSONDepthOracle.maximumAcceptedDepth, "a message \(depth) deep was accepted")
        case .batchReady(_, let ids):
            FuzzContract.require(ids.count <= payload.utf8.count / 2, "\(ids.count) ids from \(payload.utf8.count) bytes")
        case .messageReady, .queueCreated:
            break
        }
    }
}
#endif
