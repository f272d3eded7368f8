import Atomics
import Logging
import Synchronization
import TaskerModel
import TaskerPostgres

/// One queue's notified messages waiting to be read and claimed, and whether a claimer runs.
struct NotifiedBurst: Sendable {
    var pending: [Int64] = []
    var claiming = false
}

/// Burst claims (issue #16): notified message ids go to their queue's pending list; the first
/// notification of a quiet queue becomes the queue's claimer, reading and claiming the messages it
/// has, and then everything that was notified while that claim was in flight, together: one round
/// trip and one transaction to read them by id, one round trip and one transaction to claim them
/// (`StepExecutorActor.execute(batch:)`, as a poll read's), until nothing is pending. A quiet queue
/// pays nothing for it (the first message is claimed at once); under a steady stream, each claim's
/// commit is shared by the messages that arrived during the one before. Guarantees are those of the
/// poll batch: each claim checked on its own, nothing archived before its claim commits.
extension WorkerEventSystem {
    /// Most ids waiting per queue; beyond it, the queue is read by a catch-up read instead (a flood
    /// of notifications, real or forged, costs no more memory than this).
    static var maxPendingPerQueue: Int { 1_000 }

    func claimInBursts(queue: String, msgIDs: [Int64]) async {
        let leads = bursts.withLock { bursts -> Bool? in
            var burst = bursts[queue, default: NotifiedBurst()]
            defer { bursts[queue] = burst }
            guard burst.pending.count + msgIDs.count <= Self.maxPendingPerQueue else { return nil }
            burst.pending += msgIDs
            if burst.claiming { return false }
            burst.claiming = true
            return true
        }
        guard let leads else {
            scheduleCatchUp(after: .zero)
            return
        }
        guard leads else { return }  // the queue's claimer takes them after its claim in flight
        while true {
            let quantity = await claimQuantity()
            let taken = bursts.withLock { bursts -> [Int64] in
                var burst = bursts[queue, default: NotifiedBurst()]
                defer { bursts[queue] = burst }
                guard intakeOpen, quantity > 0, !burst.pending.isEmpty else {
                    // Shut down or shed: what is pending stays queued (a catch-up read finds it).
                    burst.pending = []
                    burst.claiming = false
                    return []
                }
                let taken = Array(burst.pending.prefix(quantity))
                burst.pending.removeFirst(taken.count)
                return taken
            }
            guard !taken.isEmpty else {
                if quantity == 0 { scheduleCatchUp(after: .seconds(1)) }
                return
            }
            await readAndClaim(queue: queue, msgIDs: taken)
        }
    }

    /// How many messages one burst may read: no more than a poll batch, nor than can be claimed
    /// before load shedding.
    private func claimQuantity() async -> Int {
        let batch = settings.pollBatchSize
        return min(batch, await commands.actors.stepExecutor.readCapacity ?? batch)
    }

    /// Reads `msgIDs` by id in one round trip and one transaction, then hands what was visible to
    /// the executor (one message alone, several as a batch claimed in one transaction).
    private func readAndClaim(queue: String, msgIDs: [Int64]) async {
        let statistics = commands.actors.stepExecutor.statistics
        statistics.notifiedReads.wrappingIncrement(by: msgIDs.count, ordering: .relaxed)
        let timeout = settings.visibilityTimeoutSeconds
        let messages: [QueueMessage]
        do {
            messages = try await pool.withConnection { c in
                try await PGMQ.readSpecific(c, queue: queue, msgIDs: msgIDs, visibilityTimeout: timeout)
            }
        } catch {
            logger.warning(
                "could not read notified messages; the poller will find them",
                metadata: ["queue": "\(queue)", "messages": "\(msgIDs.count)", "error": "\(error)"])
            scheduleCatchUp(after: .seconds(1))
            return
        }
        guard intakeOpen else { return leaveUnclaimed(messages.count, queue: queue) }
        switch messages.count {
        case 0: return
        case 1: await deliver(StepDelivery(read: messages[0]))
        default: await deliver(batch: messages.map(StepDelivery.init(read:)))
        }
    }
}
