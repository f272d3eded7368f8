#if DEBUG
import Logging
import TaskerMessaging
import TaskerModel
import Synchronization
import TaskerPostgres

/// A NOTIFY payload of `pgmq_message_ready.<ns>` (any role that can connect may send one) →
/// `QueueNotification.parse`, and the same payload through `NotificationIntake`, the worker's and
/// the orchestration's one intake. Contract:
/// - parsing: an embedded message is no deeper than the limit; never more ids than the payload
///   holds (each takes 2 bytes);
/// - the intake: a signal reads only a queue the channel announces; at most
///   `NotificationTriage.maxMessageIDsPerNotification` distinct ids are read by id, and a queue is
///   read whole only for more announced ids than that; a notification never poses as a (re)connect
///   or a dropped event; every notification not taken is counted; a channel not listened to yields
///   nothing.
public enum QueueNotificationCheck {
    /// The channel the intake under check listens to, and the queues it announces (the seed corpus
    /// names them).
    static let channel = "pgmq_message_ready.fuzz"
    static let announcedQueues: Set<String> = ["worker_fuzz_queue", "orchestration_step_results"]

    /// Checks one input against the contract above.
    public static func check(_ bytes: [UInt8]) {
        let payload = String(decoding: bytes, as: UTF8.self)
        checkParse(payload)
        checkIntake(payload)
    }

    private static func checkParse(_ payload: String) {
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

    private static func checkIntake(_ payload: String) {
        let rejected = FuzzTally()
        let dropped = FuzzTally()
        let intake = NotificationIntake(
            channelQueues: [channel: announcedQueues], logger: Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() }),
            onRejected: { _ in rejected.add(1) }, onDropped: { dropped.add($0) })
        let listened = PostgresNotification(channel: channel, payload: payload, backendPID: 1)
        let signal = intake.signal(for: .notification(listened), droppedTotal: 0)
        switch signal {
        case .readByID(let queue, let msgIDs):
            FuzzContract.require(announcedQueues.contains(queue), "read by id from queue \(queue.prefix(80)), not announced")
            FuzzContract.require(
                (1...NotificationTriage.maxMessageIDsPerNotification).contains(msgIDs.count),
                "\(msgIDs.count) ids read by id")
            FuzzContract.require(Set(msgIDs).count == msgIDs.count, "an id read twice for one notification")
        case .readQueue(let queue, let announced):
            FuzzContract.require(announcedQueues.contains(queue), "read queue \(queue.prefix(80)), not announced")
            FuzzContract.require(
                announced > NotificationTriage.maxMessageIDsPerNotification,
                "a whole queue read for \(announced) announced ids")
        case .catchUp(let reason):
            FuzzContract.require(
                reason == .truncatedBatch || reason == .unreadable, "a notification asked for a catch-up as \(reason)")
            FuzzContract.require(
                (reason == .unreadable) == (rejected.value == 1), "a catch-up \(reason) counted \(rejected.value) rejections")
        case nil:
            break
        }
        FuzzContract.require(rejected.value <= 1, "one notification counted \(rejected.value) times as rejected")
        FuzzContract.require(dropped.value == 0, "a notification counted as \(dropped.value) dropped events")

        // The same payload on a channel the intake does not listen to: nothing, counted once.
        let before = rejected.value
        let stranger = PostgresNotification(channel: "pgmq_message_ready.other", payload: payload, backendPID: 1)
        let strangerSignal = intake.signal(for: .notification(stranger), droppedTotal: 0)
        FuzzContract.require(strangerSignal == nil, "a channel not listened to gave \(String(describing: strangerSignal))")
        FuzzContract.require(rejected.value == before + 1, "a notification of a channel not listened to was not counted")
    }
}

/// A count the intake's hooks add to (they are `@Sendable`).
private final class FuzzTally: Sendable {
    private let count = Mutex<Int>(0)
    func add(_ n: Int) { count.withLock { $0 += n } }
    var value: Int { count.withLock { $0 } }
}
#endif
