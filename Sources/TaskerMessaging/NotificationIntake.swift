import Logging
import Synchronization
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The LISTEN side of a PGMQ intake, the same for the worker and the orchestration: what each event
/// of a `PostgresListener` on `pgmq_message_ready.*` channels asks its reader to do, so that every
/// hardening of the notification path applies to both.
///
/// Notifications are hints from anyone: any role that can connect may `pg_notify` any payload on any
/// channel. So:
/// - a notification is taken only on a channel this intake listens to, for a queue that channel
///   announces (`channelQueues`), and then as `NotificationTriage` decides (at most
///   `NotificationTriage.maxMessageIDsPerNotification` ids read by id, a larger `batch_ready` one
///   read of the queue, an embedded body never trusted); anything else is counted (`onRejected`),
///   logged at most every 10 s, and dropped;
/// - events the listener dropped because its buffer was full are counted (`onDropped`), logged at
///   most every 10 s, and answered with a catch-up read, since the messages they announced are found
///   only by reading the queues; so is every (re)connect, since notifications sent while nobody
///   listened are lost.
///
/// One signal per listener event, so the reader's work per event is bounded whatever is sent.
package final class NotificationIntake: Sendable {
    /// What the reader does for one listener event.
    package enum Signal: Sendable, Equatable {
        /// Read these messages of `queue` by id (distinct, at most
        /// `NotificationTriage.maxMessageIDsPerNotification`).
        case readByID(queue: String, msgIDs: [Int64])
        /// Read `queue` once, for `announced` messages (more than are read by id).
        case readQueue(queue: String, announced: Int)
        /// Read every queue: messages may stand behind this event but it does not say which.
        case catchUp(CatchUpReason)
    }

    /// Why a catch-up read is asked for (the reader may schedule each differently).
    package enum CatchUpReason: Sendable, Equatable {
        /// The listener (re)connected: notifications sent while nobody listened are lost.
        case connected
        /// The listener's buffer was full and events were dropped.
        case dropped
        /// `tasker.pgmq_send_batch_with_notify` cut a long `batch_ready` (ids and queue lost).
        case truncatedBatch
        /// A notification that could not be read, behind which a real message may stand (e.g. a
        /// body nested too deep to decode); rejected and counted as such, then read for.
        case unreadable

        /// When the reader reads its queues for this reason, the same rule for worker and
        /// orchestration: nil at once (messages certainly wait: nobody listened, or their events
        /// were dropped); otherwise through its `CatchUpSchedule` after this delay, coalesced per
        /// second, so a flood of forged notifications costs no more than one read a second.
        package var delay: Duration? {
            switch self {
            case .connected, .dropped: nil
            case .truncatedBatch: .zero
            case .unreadable: .seconds(1)
            }
        }
    }

    /// The queues each listened channel announces.
    package let channelQueues: [String: Set<String>]
    private let onRejected: @Sendable (_ channel: String) -> Void
    private let onDropped: @Sendable (_ count: Int) -> Void
    private let logger: Logger
    private let rejectedLog = Throttle(interval: .seconds(10))
    private let droppedLog = Throttle(interval: .seconds(10))
    /// The listener's `droppedEvents` already counted and answered.
    private let droppedSeen = Atomic<Int>(0)

    /// An intake for the channels of `channelQueues`; `onRejected` counts a notification not taken
    /// (with its channel, one this intake listens to or not), `onDropped` events lost to a full buffer.
    package init(
        channelQueues: [String: Set<String>], logger: Logger,
        onRejected: @escaping @Sendable (_ channel: String) -> Void,
        onDropped: @escaping @Sendable (_ count: Int) -> Void
    ) {
        self.channelQueues = channelQueues
        self.logger = logger
        self.onRejected = onRejected
        self.onDropped = onDropped
    }

    /// The listened channels.
    package var channels: [String] { channelQueues.keys.sorted() }

    /// The signal for `event`, given the listener's `droppedEvents` now; nil: nothing to do.
    package func signal(for event: ListenerEvent, droppedTotal: Int) -> Signal? {
        let seen = droppedSeen.exchange(droppedTotal, ordering: .relaxed)
        if droppedTotal > seen {
            onDropped(droppedTotal - seen)
            if droppedLog.allow() {
                logger.warning(
                    "the listener buffer was full and notifications were dropped; reading the queues",
                    metadata: ["dropped": "\(droppedTotal - seen)", "dropped_total": "\(droppedTotal)"])
            }
            // The catch-up read also finds this event's message, if it announced one.
            return .catchUp(.dropped)
        }
        switch event {
        case .connected:
            return .catchUp(.connected)
        case .notification(let note):
            guard let queues = channelQueues[note.channel] else {
                reject(channel: note.channel, reason: "channel \(note.channel.prefix(100)) is not listened to")
                return nil
            }
            switch NotificationTriage.triage(payload: note.payload, channelQueues: queues) {
            case .readByID(let queue, let msgIDs):
                return .readByID(queue: queue, msgIDs: msgIDs)
            case .readQueue(let queue, let announced):
                return .readQueue(queue: queue, announced: announced)
            case .catchUp:
                return .catchUp(.truncatedBatch)
            case .rejected(let reason, let catchUp):
                reject(channel: note.channel, reason: reason)
                return catchUp ? .catchUp(.unreadable) : nil
            case .none:
                return nil
            }
        }
    }

    /// The signals of `listener`'s events, until its stream ends.
    package func signals(of listener: PostgresListener) -> AsyncCompactMapSequence<AsyncStream<ListenerEvent>, Signal> {
        listener.events.compactMap { [self] event in self.signal(for: event, droppedTotal: listener.droppedEvents) }
    }

    private func reject(channel: String, reason: String) {
        onRejected(channel)
        if rejectedLog.allow() {
            logger.warning(
                "ignoring a notification (repeats are logged at most every 10 s)",
                metadata: ["channel": "\(channel.prefix(100))", "reason": "\(reason.prefix(300))"])
        }
    }
}
