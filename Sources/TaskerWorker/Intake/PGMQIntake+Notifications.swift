import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TaskerAuth
import TaskerHTTP
import TaskerModel
import TaskerPostgres

/// The listener side of `PGMQIntake`. Notifications are hints from anyone: any role that can
/// connect may `pg_notify` any payload on a worker's channel. So a notification is taken only for
/// the channel's own `worker_<ns>_queue` of a served namespace (anything else is ignored, counted
/// and logged at most every 10 s), and then `NotificationTriage` (shared with the orchestration)
/// decides: at most `NotificationTriage.maxMessageIDsPerNotification` ids are read by id (a larger
/// `batch_ready` becomes one queue read of up to `pollBatchSize` messages), and a body embedded in a
/// notification is never acted on: the message itself is read by id and judged by its stored body.
extension PGMQIntake {

    func consumeListener(_ listener: PostgresListener, slots: AsyncSemaphore) async {
        await withDiscardingTaskGroup { deliveries in
            for await event in listener.events.cancelOnGracefulShutdown() {
                // Shutdown began: nothing more is read or claimed (the stream ends soon after).
                guard intakeOpen else { continue }
                answerDroppedEvents(listener)
                switch event {
                case .connected:
                    // Anything sent while we were not listening is only found by reading the queues.
                    catchUp()
                case .notification(let note):
                    let queue = QueueNames.queue(ofChannel: note.channel)
                    guard servedQueues.contains(queue) else {
                        rejectNotification(queue: queue, reason: "channel \(note.channel.prefix(100)) is not a served namespace's")
                        continue
                    }
                    // At capacity, a notification would only be refused by load shedding (and its
                    // message re-read later anyway): leave the message queued and read the queue
                    // when a handler permit frees, so a burst costs neither claims nor memory.
                    guard executor.admitsNotification(forQueue: queue) else {
                        // The freed permit reads the queue; this is the safety net if none comes.
                        scheduleCatchUp(after: .seconds(1))
                        continue
                    }
                    let decision = NotificationTriage.triage(payload: note.payload, channelQueues: [queue])
                    switch decision {
                    case .readByID, .readQueue:
                        break
                    case .catchUp:
                        // Coalesced per second, so a forged one costs no more.
                        scheduleCatchUp(after: .zero)
                        continue
                    case .rejected(let reason, let catchUp):
                        rejectNotification(queue: queue, reason: reason)
                        if catchUp { scheduleCatchUp(after: .seconds(1)) }
                        continue
                    case .none:
                        continue
                    }
                    // Cancelled (forced shutdown): the message waits out its visibility timeout.
                    guard (try? await slots.acquire()) != nil else { continue }
                    deliveries.addTask {
                        await self.handle(decision)
                        slots.release()
                    }
                }
            }
        }
    }

    /// Counts, logs (at most every 10 s) and otherwise ignores a notification on `queue`'s channel.
    private func rejectNotification(queue: String, reason: String) {
        StepMetrics.notificationRejected(queue: queue, in: executor.statistics)
        if rejectedNotificationLog.allow() {
            logger.warning(
                "ignoring a notification (repeats are logged at most every 10 s)",
                metadata: ["queue": "\(queue.prefix(100))", "reason": "\(reason.prefix(300))"])
        }
    }

    /// Events the listener dropped since the last look (its buffer was full): counted, logged
    /// (at most every 10 s) and answered with a catch-up read, since the messages they announced
    /// are found only by reading the queues.
    private func answerDroppedEvents(_ listener: PostgresListener) {
        let total = listener.droppedEvents
        let seen = droppedSeen.exchange(total, ordering: .relaxed)
        guard total > seen else { return }
        StepMetrics.notificationsDropped(total - seen, in: executor.statistics)
        if droppedNotificationLog.allow() {
            logger.warning(
                "the listener buffer was full and notifications were dropped; reading the queues",
                metadata: [
                    "dropped": "\(total - seen)", "dropped_total": "\(total)",
                    "buffer_size": "\(settings.listenerBufferSize)",
                ])
        }
        catchUp()
    }

    private func handle(_ decision: NotificationTriage.Decision) async {
        switch decision {
        case .readByID(let queue, let msgIDs):
            await readAndExecute(queue: queue, msgIDs: msgIDs)
        case .readQueue(let queue, let announced):
            await readNotifiedBatch(queue: queue, announced: announced)
        case .catchUp, .rejected, .none:
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
        let statistics = executor.statistics
        for msgID in ids {
            guard intakeOpen else { return }
            do {
                let timeout = settings.visibilityTimeoutSeconds
                StepMetrics.notifiedReads(in: statistics)
                let message = try await pool.withConnection { c in
                    try await PGMQ.readSpecific(c, queue: queue, msgID: msgID, visibilityTimeout: timeout)
                }
                guard let message else { continue }
                guard intakeOpen else { return leaveUnclaimed(1, queue: queue) }
                await deliver(StepDelivery(read: message))
            } catch {
                logger.warning(
                    "could not read a notified message; the poller will find it",
                    metadata: ["queue": "\(queue)", "msg_id": "\(msgID)", "error": "\(error)"])
            }
        }
    }

    /// One queue read for a `batch_ready` naming many messages: up to `pollBatchSize` (no more
    /// than can be claimed before load shedding); when it comes back full, a catch-up read follows.
    private func readNotifiedBatch(queue: String, announced: Int) async {
        let quantity = await readQuantity(upTo: min(announced, settings.pollBatchSize))
        guard quantity > 0, intakeOpen else { return }
        StepMetrics.notifiedReads(in: executor.statistics)
        let timeout = settings.visibilityTimeoutSeconds
        let messages: [QueueMessage]
        do {
            messages = try await pool.withConnection { c in
                try await PGMQ.read(c, queue: queue, visibilityTimeout: timeout, quantity: quantity)
            }
        } catch {
            logger.warning(
                "could not read the queue for a batch notification; reading it again soon",
                metadata: ["queue": "\(queue)", "error": "\(error)"])
            scheduleCatchUp(after: .seconds(1))
            return
        }
        guard intakeOpen else { return leaveUnclaimed(messages.count, queue: queue) }
        if !messages.isEmpty { await deliver(batch: messages.map(StepDelivery.init(read:))) }
        if messages.count == quantity && announced > quantity { scheduleCatchUp(after: .milliseconds(1)) }
    }
}
