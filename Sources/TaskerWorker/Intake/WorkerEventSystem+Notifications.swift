import Atomics
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TaskerAuth
import TaskerModel
import TaskerPostgres

/// The listener side of `WorkerEventSystem`. Notifications are hints from anyone: any role that can
/// connect may `pg_notify` any payload on a worker's channel. So a notification is taken only for
/// the channel's own `worker_<ns>_queue` of a served namespace (anything else is ignored, counted
/// and logged at most every 10 s), at most `maxMessageIDsPerNotification` ids are read by id (a
/// larger `batch_ready` becomes one queue read), and a body embedded in a notification is never
/// acted on: the message itself is read by id and judged by its stored body.
extension WorkerEventSystem {
    /// Most message ids read by id for one notification; a `batch_ready` naming more is answered
    /// with one queue read of up to `pollBatchSize` messages instead.
    package static let maxMessageIDsPerNotification = 10

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
                    guard commands.actors.stepExecutor.admitsNotification(forQueue: queue) else {
                        // The freed permit reads the queue; this is the safety net if none comes.
                        scheduleCatchUp(after: .seconds(1))
                        continue
                    }
                    let notification: QueueNotification
                    do {
                        notification = try QueueNotification.parse(note.payload)
                    } catch  where Self.isTruncatedBatchReady(note.payload) {
                        // Upstream's `pgmq_send_batch_with_notify` cuts a `batch_ready` over 7,800
                        // characters (ids and queue name lost): not forged, but only a queue read
                        // finds its messages (coalesced per second, so a forged one costs no more).
                        scheduleCatchUp(after: .zero)
                        continue
                    } catch {
                        rejectNotification(queue: queue, reason: "\(error)")
                        // A real message may stand behind it (e.g. a body nested too deep to
                        // decode): read the queues soon (coalesced per second).
                        scheduleCatchUp(after: .seconds(1))
                        continue
                    }
                    guard notification.queue == queue else {
                        rejectNotification(
                            queue: queue,
                            reason: "it names queue \(notification.queue.prefix(100)), "
                                + "not its channel's \(queue)")
                        continue
                    }
                    // Cancelled (forced shutdown): the message waits out its visibility timeout.
                    guard (try? await slots.acquire()) != nil else { continue }
                    deliveries.addTask {
                        await self.handle(notification)
                        slots.release()
                    }
                }
            }
        }
    }

    /// Whether `payload` is a `batch_ready` that `tasker.pgmq_send_batch_with_notify` cut to 7,790
    /// characters and closed with `...}` (migrations/0003).
    static func isTruncatedBatchReady(_ payload: String) -> Bool {
        payload.hasSuffix("...}") && payload.utf8.count <= 7_800
            && payload.replacingOccurrences(of: " ", with: "").hasPrefix(#"{"event_type":"batch_ready""#)
    }

    /// Counts, logs (at most every 10 s) and otherwise ignores a notification on `queue`'s channel.
    private func rejectNotification(queue: String, reason: String) {
        StepMetrics.notificationRejected(queue: queue, in: commands.actors.stepExecutor.statistics)
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
        StepMetrics.notificationsDropped(total - seen, in: commands.actors.stepExecutor.statistics)
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

    private func handle(_ notification: QueueNotification) async {
        switch notification {
        case .messageWithPayload(let queue, let msgID, _):
            // The embedded body is never acted on: anyone can send it, with any step and a real
            // message's id, and acting on it (a claim, or a poison / misrouted / stale verdict)
            // archives that id. The message itself is read by id (one round trip more than
            // trusting the payload) and judged by its stored body.
            await readAndExecute(queue: queue, msgIDs: [msgID])
        case .messageReady(let queue, let msgID):
            await readAndExecute(queue: queue, msgIDs: [msgID])
        case .batchReady(let queue, let msgIDs):
            await readAndExecute(queue: queue, msgIDs: msgIDs)
        case .queueCreated:
            break
        }
    }

    private func readAndExecute(queue: String, msgIDs: [Int64]) async {
        var seen: Set<Int64> = []
        let ids = msgIDs.filter { seen.insert($0).inserted }
        guard ids.count <= Self.maxMessageIDsPerNotification else {
            await readNotifiedBatch(queue: queue, announced: ids.count)
            return
        }
        if settings.claimNotifiedBursts {
            await claimInBursts(queue: queue, msgIDs: ids)
            return
        }
        let statistics = commands.actors.stepExecutor.statistics
        for msgID in ids {
            guard intakeOpen else { return }
            do {
                let timeout = settings.visibilityTimeoutSeconds
                statistics.notifiedReads.wrappingIncrement(ordering: .relaxed)
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
        let executor = commands.actors.stepExecutor
        let quantity = await readQuantity(upTo: min(announced, settings.pollBatchSize))
        guard quantity > 0, intakeOpen else { return }
        executor.statistics.notifiedReads.wrappingIncrement(ordering: .relaxed)
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
