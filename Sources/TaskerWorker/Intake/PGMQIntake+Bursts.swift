import Logging
import Synchronization
import TaskerHandlerSDK
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// One queue's notified message ids waiting to be read and claimed, and whether its claimer runs.
/// Invariant: `pending` is empty whenever `claiming` is false.
struct NotifiedBurst: Sendable {
    /// Ids in arrival order, each once (`queued` holds the same ids, for de-duplication).
    var pending: [Int64] = []
    var queued: Set<Int64> = []
    var claiming = false

    /// How an arrival was taken.
    enum Arrival: Equatable {
        /// The queue was quiet: the caller becomes its claimer and claims at once.
        case leads
        /// A claimer runs: it takes the ids after its claim in flight.
        case joined
        /// More ids than the bound wait already: none is kept, the queue is read instead.
        case overflow
    }

    /// Adds `ids` (those not already waiting) unless that would exceed `limit`.
    mutating func add(_ ids: [Int64], limit: Int) -> Arrival {
        var fresh: [Int64] = []
        var inArrival: Set<Int64> = []
        for id in ids where !queued.contains(id) && inArrival.insert(id).inserted { fresh.append(id) }
        guard pending.count + fresh.count <= limit else { return .overflow }
        pending += fresh
        queued.formUnion(fresh)
        if claiming { return .joined }
        claiming = true
        return .leads
    }

    /// The next ids to claim, at most `quantity`; none (and the claimer ends, forgetting what
    /// waits) when `quantity` is 0 or nothing waits.
    mutating func take(_ quantity: Int) -> [Int64] {
        guard quantity > 0, !pending.isEmpty else {
            self = NotifiedBurst()
            return []
        }
        let taken = Array(pending.prefix(quantity))
        pending.removeFirst(taken.count)
        queued.subtract(taken)
        return taken
    }
}

/// Burst claims (issue #16, `processing.claim_notified_bursts`): a notified id goes to its queue's
/// pending list. The first notification of a quiet queue makes its task the queue's claimer, which
/// reads and claims its own ids at once (a quiet queue pays nothing), then everything notified while
/// that claim was in flight, together: ONE round trip and ONE transaction to read them by id
/// (`PGMQ.readSpecific(_:queue:msgIDs:visibilityTimeout:)`), ONE round trip and ONE transaction to
/// claim them (`StepExecutor.execute(batch:)`, as a poll read's: each claim checked on its own,
/// nothing archived before its claim commits, a failed batch claimed one by one), until nothing waits.
/// The checks are the single-message path's: the listener's `admitsNotification` before an id is
/// taken, `readQuantity` (claiming off, intake closed, shedding) before each read, `intakeOpen` before
/// each read and each claim. Ids forgotten when the claimer stops (shutdown, claiming off, shedding)
/// were never read, so their messages stay visible for the catch-up read that shedding schedules, for
/// another worker, or for this one's next start.
extension PGMQIntake {
    /// Most ids waiting per queue; beyond it the queue is read by a catch-up read instead, so a
    /// flood of notifications, real or forged, costs no more memory than this.
    static var maxPendingPerQueue: Int { 1_000 }

    func claimInBursts(queue: String, msgIDs: [Int64]) async {
        let arrival = bursts.withLock { $0[queue, default: NotifiedBurst()].add(msgIDs, limit: Self.maxPendingPerQueue) }
        switch arrival {
        case .joined:
            return
        case .overflow:
            catchUps.schedule(after: .zero)
            return
        case .leads:
            break
        }
        while true {
            // Nothing waits: the claimer ends (the next arrival leads). Only the claimer removes ids,
            // so they still wait when it takes them below.
            let waiting = bursts.withLock { bursts in
                guard bursts[queue]?.pending.isEmpty == false else {
                    bursts[queue] = nil
                    return false
                }
                return true
            }
            guard waiting else { return }
            // 0 once intake closed or claiming is off; at the shedding threshold, 0 and a re-read arranged.
            let quantity = await readQuantity(upTo: settings.pollBatchSize)
            let taken = bursts.withLock { bursts in
                let taken = bursts[queue, default: NotifiedBurst()].take(quantity)
                if taken.isEmpty { bursts[queue] = nil }
                return taken
            }
            guard !taken.isEmpty else { return }
            await readAndClaim(queue: queue, msgIDs: taken)
        }
    }

    /// Reads `msgIDs` by id in one round trip (and one transaction), then hands what was visible to
    /// the executor: one message alone, as the single-message path does; several as a batch whose
    /// claims share one round trip and one transaction.
    private func readAndClaim(queue: String, msgIDs: [Int64]) async {
        guard intakeOpen else { return }
        StepMetrics.notifiedReads(msgIDs.count, in: executor.statistics)
        // Nothing read when it fails (the read's transaction rolled back): `QueueReader` logs it and
        // a catch-up read finds the messages.
        guard
            let messages = await reader.read(queue, msgIDs: msgIDs, visibilityTimeout: settings.visibilityTimeoutSeconds)
        else { return }
        guard intakeOpen else { return leaveUnclaimed(messages.count, queue: queue) }
        switch messages.count {
        case 0: return
        case 1: await deliver(StepDelivery(read: messages[0]))
        default: await deliver(batch: messages.map(StepDelivery.init(read:)))
        }
    }
}
