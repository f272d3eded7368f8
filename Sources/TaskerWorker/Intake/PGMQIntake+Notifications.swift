import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TaskerAuth
import TaskerHTTP
import TaskerHandlerSDK
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The listener side of `PGMQIntake`. What each listener event asks for is decided by
/// TaskerMessaging's `NotificationIntake`, the orchestration's too: a notification is taken only for
/// the channel's own `worker_<ns>_queue` of a served namespace (anything else is ignored, counted and
/// logged at most every 10 s), and then as `NotificationTriage` decides: at most
/// `NotificationTriage.maxMessageIDsPerNotification` ids are read by id (a larger `batch_ready`
/// becomes one queue read of up to `pollBatchSize` messages), and a body embedded in a notification
/// is never acted on: the message itself is read by id and judged by its stored body. (Re)connects
/// and events dropped by a full listener buffer are answered with catch-up reads.
extension PGMQIntake {

    /// The notification intake of the served namespaces' channels, counting into the worker's statistics.
    static func notificationIntake(
        namespaces: [String], statistics: WorkerStatistics, logger: Logger
    ) -> NotificationIntake {
        var channelQueues: [String: Set<String>] = [:]
        for namespace in namespaces {
            channelQueues[QueueNames.readyChannel(namespace: namespace)] = [QueueNames.workerQueue(namespace: namespace)]
        }
        return NotificationIntake(
            channelQueues: channelQueues, logger: logger,
            onRejected: { channel in
                StepMetrics.notificationRejected(queue: QueueNames.queue(ofChannel: channel), in: statistics)
            },
            onDropped: { count in StepMetrics.notificationsDropped(count, in: statistics) })
    }

    func consumeListener(_ listener: PostgresListener, slots: AsyncSemaphore) async {
        await withDiscardingTaskGroup { deliveries in
            for await signal in notifications.signals(of: listener).cancelOnGracefulShutdown() {
                // Shutdown began: nothing more is read or claimed (the stream ends soon after).
                guard intakeOpen else { continue }
                let queue: String
                switch signal {
                case .catchUp(let reason):
                    // Anything sent while we were not listening, or dropped, is only found by
                    // reading the queues: at once; the rest coalesced per second (the
                    // orchestration's rule too: `CatchUpReason.delay`).
                    if let delay = reason.delay { catchUps.schedule(after: delay) } else { catchUp() }
                    continue
                case .readByID(let notified, _), .readQueue(let notified, _):
                    queue = notified
                }
                // At capacity, a notification would only be refused by load shedding (and its
                // message re-read later anyway): leave the message queued and read the queue
                // when a handler permit frees, so a burst costs neither claims nor memory.
                guard executor.admitsNotification(forQueue: queue) else {
                    // The freed permit reads the queue; this is the safety net if none comes.
                    catchUps.schedule(after: .seconds(1))
                    continue
                }
                // Cancelled (forced shutdown): the message waits out its visibility timeout.
                guard (try? await slots.acquire()) != nil else { continue }
                deliveries.addTask {
                    await self.handle(signal)
                    slots.release()
                }
            }
        }
    }

    private func handle(_ signal: NotificationIntake.Signal) async {
        switch signal {
        case .readByID(let queue, let msgIDs):
            await readAndExecute(queue: queue, msgIDs: msgIDs)
        case .readQueue(let queue, let announced):
            await readNotifiedBatch(queue: queue, announced: announced)
        case .catchUp:
            break
        }
    }

    /// Reads `ids` (distinct, at most `NotificationTriage.maxMessageIDsPerNotification`) by id and
    /// claims them.
    private func readAndExecute(queue: String, msgIDs ids: [Int64]) async {
        if settings.claimNotifiedBursts {
            await claimInBursts(queue: queue, msgIDs: ids)
            return
        }
        for msgID in ids {
            guard intakeOpen else { return }
            StepMetrics.notifiedReads(in: executor.statistics)
            // A failed read is logged and a catch-up read follows (`QueueReader`).
            guard
                let message = await reader.read(queue, msgIDs: [msgID], visibilityTimeout: settings.visibilityTimeoutSeconds)?
                    .first
            else { continue }
            guard intakeOpen else { return leaveUnclaimed(1, queue: queue) }
            await deliver(StepDelivery(read: message))
        }
    }

    /// One queue read for a `batch_ready` naming many messages: up to `pollBatchSize` (no more
    /// than can be claimed before load shedding); when it comes back full, a catch-up read follows.
    private func readNotifiedBatch(queue: String, announced: Int) async {
        let quantity = await readQuantity(upTo: min(announced, settings.pollBatchSize))
        guard quantity > 0, intakeOpen else { return }
        StepMetrics.notifiedReads(in: executor.statistics)
        // A failed read is logged and a catch-up read follows (`QueueReader`).
        guard
            let messages = await reader.read(queue, quantity: quantity, visibilityTimeout: settings.visibilityTimeoutSeconds)
        else { return }
        guard intakeOpen else { return leaveUnclaimed(messages.count, queue: queue) }
        if !messages.isEmpty { await deliver(batch: messages.map(StepDelivery.init(read:))) }
        if messages.count == quantity && announced > quantity { catchUps.schedule(after: .milliseconds(1)) }
    }
}
