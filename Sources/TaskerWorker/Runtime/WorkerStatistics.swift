import TaskerHTTP

/// The worker's step statistics (the upstream `AtomicStepExecutionStats` plus the pipeline's own).
/// Every count of the worker is a series of `counters`, recorded through `StepMetrics`, once per
/// event: `/metrics` renders the series, `/metrics/worker` and the C ABI's metrics (the same
/// document) read `snapshot`, `/metrics/events` reads `domainEventRouting`, all computed from one
/// copy of the series. (Latencies are histograms in `WorkerMetrics.shared`; they are not counts.)
public final class WorkerStatistics: Sendable {
    /// The step pipeline's labelled counters, the one count behind every metrics endpoint.
    package let counters = StepCounters()

    package init() {}

    /// The Prometheus counter families of `counters` (`/metrics`).
    var prometheusFamilies: [MetricFamily] { counters.families(help: StepMetrics.help) }

    /// The domain event routing counts (`/metrics/events`) now, with `subscribers` in-process subscribers.
    func domainEventRouting(subscribers: Int) -> DomainEventRouting {
        DomainEventRouting(counters.current, subscribers: subscribers)
    }

    /// The counters now.
    public var snapshot: Snapshot {
        let counts = counters.current
        typealias Name = StepMetrics.Name
        let executed = counts.total(Name.executions)
        let time = counts.total(Name.executionTime)
        return Snapshot(
            totalExecuted: executed, totalSucceeded: counts.total(Name.successes),
            totalFailed: counts.total(Name.failures, where: "error_type", is: StepMetrics.FailureType.handlerExecutionFailed.rawValue),
            totalExecutionTimeMs: time,
            averageExecutionTimeMs: executed == 0 ? 0 : Double(time) / Double(executed),
            claimed: counts.total(Name.claimed),
            claimsLost: counts.total(Name.failures, where: "error_type", is: StepMetrics.FailureType.claimFailed.rawValue),
            poisonMessages: counts.total(Name.poisonMessages), staleMessages: counts.total(Name.staleMessages),
            shedClaims: counts.total(Name.claimsShed), completionRetries: counts.total(Name.completionRetries),
            completionsBatched: counts.total(Name.completionsBatched),
            claimsBatched: counts.total(Name.claimsBatched),
            claimsRecovered: counts.total(Name.claimsRecovered),
            claimsRefusedForLease: counts.total(Name.claimsRefusedForLease),
            completionsRecovered: counts.total(Name.completionsRecovered),
            domainEventsPublished: counts.total(Name.domainEventsPublished),
            domainEventsFailed: counts.total(Name.domainEventsFailed),
            domainEventsInvalid: counts.total(Name.domainEventsInvalid),
            notificationsRejected: counts.total(Name.notificationsRejected),
            notificationsDropped: counts.total(Name.notificationsDropped),
            notifiedReads: counts.total(Name.notifiedReads),
            deliveriesRefused: counts.total(Name.deliveriesRefused),
            stepsRecovered: counts.total(Name.stepsRecovered), lateResultsRefused: counts.total(Name.lateResultsRefused),
            recoveryScans: counts.total(Name.recoveryScans), orphanedClaimsRetired: counts.total(Name.orphanedClaimsRetired))
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
        /// Steps hydrated and claimed together with others in one transaction: a poll read's, or a
        /// burst of notified messages (`processing.claim_notified_bursts`).
        public var claimsBatched: Int
        /// Claims that committed although their answer was lost with the connection (found by
        /// asking the database), whose steps then ran.
        public var claimsRecovered: Int
        /// Claims the database refused because this worker's liveness lease had expired or was
        /// about to (`ClaimOutcome.leaseLapsed`); claiming then paused until a renewal was stored.
        public var claimsRefusedForLease: Int = 0
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
        /// over `NotificationTriage.maxMessageIDsPerNotification` ids (read as one queue read).
        public var notifiedReads: Int = 0
        /// Deliveries the executor refused because their queue is not one of this worker's
        /// (nothing read, claimed or archived).
        public var deliveriesRefused: Int = 0
        /// Steps of lost workers (crash recovery) this worker gave a retryable `worker_lost` result.
        public var stepsRecovered: Int = 0
        /// Results of this worker not stored because the step was no longer `in_progress` (its
        /// worker was taken for lost and the step recovered meanwhile, or orchestration moved it on).
        public var lateResultsRefused: Int = 0
        /// Crash-recovery scans this worker ran (only the fleet's elected scanner scans).
        public var recoveryScans: Int = 0
        /// Steps this worker found claimed by one of its own claims whose answer was lost and taken
        /// for not committed (behind a transaction pooler), and gave a retryable error result.
        public var orphanedClaimsRetired: Int = 0

        /// Failed / executed, 0 when nothing ran.
        public var failureRate: Double { totalExecuted == 0 ? 0 : Double(totalFailed) / Double(totalExecuted) }
    }
}
