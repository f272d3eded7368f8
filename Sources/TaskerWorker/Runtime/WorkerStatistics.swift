import Atomics

/// Lock-free step counters (the upstream `AtomicStepExecutionStats` plus the pipeline's own).
public final class WorkerStatistics: Sendable {
    let executed = ManagedAtomic<Int>(0)
    let succeeded = ManagedAtomic<Int>(0)
    let failed = ManagedAtomic<Int>(0)
    let executionTimeMs = ManagedAtomic<Int>(0)
    let claimed = ManagedAtomic<Int>(0)
    let claimsLost = ManagedAtomic<Int>(0)
    let poisonMessages = ManagedAtomic<Int>(0)
    let staleMessages = ManagedAtomic<Int>(0)
    let shedClaims = ManagedAtomic<Int>(0)
    let completionRetries = ManagedAtomic<Int>(0)
    let completionsBatched = ManagedAtomic<Int>(0)
    let claimsBatched = ManagedAtomic<Int>(0)
    let claimsRecovered = ManagedAtomic<Int>(0)
    let completionsRecovered = ManagedAtomic<Int>(0)
    let domainEventsPublished = ManagedAtomic<Int>(0)
    let domainEventsFailed = ManagedAtomic<Int>(0)
    let domainEventsInvalid = ManagedAtomic<Int>(0)
    let notificationsRejected = ManagedAtomic<Int>(0)
    let notificationsDropped = ManagedAtomic<Int>(0)
    let notifiedReads = ManagedAtomic<Int>(0)
    let deliveriesRefused = ManagedAtomic<Int>(0)

    public init() {}

    /// Records a finished step.
    public func recordExecution(success: Bool, executionTimeMs ms: Int) {
        executed.wrappingIncrement(ordering: .relaxed)
        (success ? succeeded : failed).wrappingIncrement(ordering: .relaxed)
        executionTimeMs.wrappingIncrement(by: max(0, ms), ordering: .relaxed)
    }

    public var snapshot: Snapshot {
        let executed = executed.load(ordering: .relaxed)
        let time = executionTimeMs.load(ordering: .relaxed)
        return Snapshot(
            totalExecuted: executed, totalSucceeded: succeeded.load(ordering: .relaxed),
            totalFailed: failed.load(ordering: .relaxed), totalExecutionTimeMs: time,
            averageExecutionTimeMs: executed == 0 ? 0 : Double(time) / Double(executed),
            claimed: claimed.load(ordering: .relaxed), claimsLost: claimsLost.load(ordering: .relaxed),
            poisonMessages: poisonMessages.load(ordering: .relaxed), staleMessages: staleMessages.load(ordering: .relaxed),
            shedClaims: shedClaims.load(ordering: .relaxed), completionRetries: completionRetries.load(ordering: .relaxed),
            completionsBatched: completionsBatched.load(ordering: .relaxed),
            claimsBatched: claimsBatched.load(ordering: .relaxed),
            claimsRecovered: claimsRecovered.load(ordering: .relaxed),
            completionsRecovered: completionsRecovered.load(ordering: .relaxed),
            domainEventsPublished: domainEventsPublished.load(ordering: .relaxed),
            domainEventsFailed: domainEventsFailed.load(ordering: .relaxed),
            domainEventsInvalid: domainEventsInvalid.load(ordering: .relaxed),
            notificationsRejected: notificationsRejected.load(ordering: .relaxed),
            notificationsDropped: notificationsDropped.load(ordering: .relaxed),
            notifiedReads: notifiedReads.load(ordering: .relaxed),
            deliveriesRefused: deliveriesRefused.load(ordering: .relaxed))
    }

    /// A consistent-enough copy of the counters.
    public struct Snapshot: Sendable, Equatable {
        public var totalExecuted: Int
        public var totalSucceeded: Int
        public var totalFailed: Int
        public var totalExecutionTimeMs: Int
        public var averageExecutionTimeMs: Double
        public var claimed: Int
        public var claimsLost: Int
        public var poisonMessages: Int
        public var staleMessages: Int
        public var shedClaims: Int
        public var completionRetries: Int
        /// Results stored together with others in one transaction (the completion processor batches under load).
        public var completionsBatched: Int
        /// Polled steps hydrated and claimed together with others in one transaction.
        public var claimsBatched: Int
        /// Claims that committed although their answer was lost with the connection (found by
        /// asking the database), whose steps then ran.
        public var claimsRecovered: Int
        /// Results an earlier attempt had stored although its answer was lost with the connection.
        public var completionsRecovered: Int
        public var domainEventsPublished: Int
        public var domainEventsFailed: Int
        /// Events skipped because their payload did not satisfy the declared `schema`.
        public var domainEventsInvalid: Int
        /// Notifications ignored: malformed, or naming a queue other than their channel's own
        /// `worker_<ns>_queue` of a served namespace (anyone who can connect can `pg_notify`).
        public var notificationsRejected: Int = 0
        /// Notifications lost because the listener's buffer (`pgmq_event_buffer_size`) was full;
        /// each loss is followed by a catch-up read of the queues.
        public var notificationsDropped: Int = 0
        /// Queue reads made for notifications: one per message read by id, one per `batch_ready`
        /// over `WorkerEventSystem.maxMessageIDsPerNotification` ids (read as one queue read).
        public var notifiedReads: Int = 0
        /// Deliveries the executor refused because their queue is not one of this worker's
        /// (nothing read, claimed or archived).
        public var deliveriesRefused: Int = 0

        /// Failed / executed, 0 when nothing ran.
        public var failureRate: Double { totalExecuted == 0 ? 0 : Double(totalFailed) / Double(totalExecuted) }
    }
}
