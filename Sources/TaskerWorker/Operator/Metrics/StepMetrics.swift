import Foundation
import Metrics
import Synchronization
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres

/// The step pipeline's instrumentation: one call per event at each call site. Counters go into the
/// worker's `WorkerStatistics.counters` (the one count `/metrics` and `/metrics/worker` are computed
/// from); latency histograms into `WorkerMetrics.shared` (process-wide; the `namespace` label tells
/// the workers' namespaces apart).
///
/// Names follow upstream's OTel names (`tasker.steps.claimed.total` → `tasker_steps_claimed_total`).
/// `tasker_steps_failures_total{error_type}` uses upstream's categories (`step_not_found`,
/// `database_error`, `claim_failed`, `handler_execution_failed`); the handler's own error type is on
/// `tasker_steps_handler_errors_total{error_type,retryable}`. Latencies are histograms in seconds.
enum StepMetrics {
    /// Upstream's failure categories (`error_type` on `tasker_steps_failures_total`).
    enum FailureType: String, Sendable, CaseIterable {
        case stepNotFound = "step_not_found"
        case databaseError = "database_error"
        case claimFailed = "claim_failed"
        case messageDeletionFailed = "message_deletion_failed"
        case handlerExecutionFailed = "handler_execution_failed"
    }

    /// Metric labels (swift-metrics names, sanitised on output) and their HELP texts.
    package enum Name {
        package static let claimed = "tasker.steps.claimed.total"
        package static let executions = "tasker.steps.executions.total"
        static let successes = "tasker.steps.successes.total"
        package static let failures = "tasker.steps.failures.total"
        static let handlerErrors = "tasker.steps.handler_errors.total"
        static let resultsSubmitted = "tasker.steps.results_submitted.total"
        package static let poisonMessages = "tasker.steps.poison_messages.total"
        static let staleMessages = "tasker.steps.stale_messages.total"
        static let claimsShed = "tasker.steps.claims_shed.total"
        static let completionRetries = "tasker.steps.completion_retries.total"
        static let pollFailures = "tasker.worker.poll_failures.total"
        package static let notificationsRejected = "tasker.worker.notifications_rejected.total"
        package static let notificationsDropped = "tasker.worker.notifications_dropped.total"
        static let claimDuration = "tasker.step.claim.duration"
        static let executionDuration = "tasker.step.execution.duration"
        static let submissionDuration = "tasker.step_result.submission.duration"
        static let endToEndDuration = "tasker.step.end_to_end.duration"
        static let domainEventsPublished = "tasker.domain_events.published.total"
        static let domainEventsFailed = "tasker.domain_events.failed.total"
        static let domainEventsInvalid = "tasker.domain_events.invalid.total"
        static let stepsRecovered = "tasker.steps.recovered.total"
        static let recoveryScans = "tasker.recovery.scans.total"
        static let orphanedClaimsRetired = "tasker.steps.orphaned_claims_retired.total"
        static let lateResultsRefused = "tasker.steps.late_results_refused.total"
        static let claimsBatched = "tasker.steps.claims_batched.total"
        static let claimsRecovered = "tasker.steps.claims_recovered.total"
        static let claimsRefusedForLease = "tasker.steps.claims_refused_for_lease.total"
        static let completionsBatched = "tasker.steps.completions_batched.total"
        static let completionsRecovered = "tasker.steps.completions_recovered.total"
        static let executionTime = "tasker.steps.execution_time_milliseconds.total"
        package static let notifiedReads = "tasker.worker.notified_reads.total"
        static let deliveriesRefused = "tasker.worker.deliveries_refused.total"
        static let domainEventSubscriberDeliveries = "tasker.domain_events.subscriber_deliveries.total"
    }

    static let help: [String: String] = [
        Name.claimed: "Steps claimed by this worker",
        Name.executions: "Step results produced (success or failure)",
        Name.successes: "Steps whose handler succeeded",
        Name.failures: "Step processing failures by category",
        Name.handlerErrors: "Failed step results by the result's error type",
        Name.resultsSubmitted: "Step results committed and sent to orchestration",
        Name.poisonMessages: "Undecodable or orphaned step messages archived",
        Name.staleMessages: "Messages for steps already past enqueued, archived",
        Name.claimsShed: "Deliveries left queued by load shedding",
        Name.completionRetries: "Retried attempts to store a step result",
        Name.pollFailures: "Failed queue reads by the fallback poller",
        Name.notificationsRejected: "Notifications ignored: malformed or naming a queue this worker does not serve",
        Name.notificationsDropped: "Notifications lost to a full listener buffer (a catch-up read follows)",
        StepMetrics.timerName(Name.claimDuration): "Hydrate and claim latency in seconds",
        StepMetrics.timerName(Name.executionDuration): "Handler execution time in seconds",
        StepMetrics.timerName(Name.submissionDuration): "Time to store a step result in seconds (retries included)",
        StepMetrics.timerName(Name.endToEndDuration): "Claim start to result committed in seconds",
        Name.domainEventsPublished: "Domain events published by delivery mode",
        Name.domainEventsFailed: "Domain events that could not be published",
        Name.domainEventsInvalid: "Domain events skipped because the payload violates the schema",
        Name.stepsRecovered: "Steps of lost workers given a retryable worker_lost result by this worker",
        Name.recoveryScans: "Crash-recovery scans run by this worker (the fleet's elected scanner only)",
        Name.orphanedClaimsRetired:
            "Steps of this worker's claims whose answer was lost behind a transaction pooler and that committed after the lookup, given a retryable error result",
        Name.lateResultsRefused: "Results not stored because the step was no longer in_progress (e.g. recovered by another worker)",
        Name.claimsBatched: "Steps claimed together with others in one transaction (a poll read's or a notified burst's)",
        Name.claimsRecovered: "Claims found committed after their answer was lost",
        Name.claimsRefusedForLease: "Claims the database refused: this worker's liveness lease had expired or was about to",
        Name.completionsBatched: "Results stored together with others in one transaction",
        Name.completionsRecovered: "Results found stored after their answer was lost",
        Name.executionTime: "Sum of the claim-to-stored times of the step results produced, in milliseconds",
        Name.notifiedReads: "Queue reads made for notifications (one per message read by id, one per large batch)",
        Name.deliveriesRefused: "Deliveries refused: their queue is not this worker's",
        Name.domainEventSubscriberDeliveries: "Domain events handed to in-process subscribers",
    ]

    static func timerName(_ label: String) -> String { PrometheusMetricsFactory.timerName(label) }

    /// The shared factory, with the HELP texts registered on first use.
    static let factory: PrometheusMetricsFactory = {
        let factory = WorkerMetrics.shared
        for (name, text) in help { factory.setHelp(text, for: name) }
        return factory
    }()

    private struct InFlight {
        /// Claim start of each claimed step, for the end-to-end latency (removed on completion).
        var claimStarts: [UUID: ContinuousClock.Instant] = [:]
        /// Steps whose handler result is in the completion channel or being stored.
        var awaitingCompletion: Set<UUID> = []
    }

    private static let inFlight = Mutex(InFlight())

    /// Handler results waiting for (or in) the completion service, process-wide; for channel health.
    static var completionBacklog: Int { inFlight.withLock { $0.awaitingCompletion.count } }

    // MARK: - Executor

    /// A claim won: counts it and records the hydrate+claim latency.
    package static func claimed(
        _ step: UUID, namespace: String, since start: ContinuousClock.Instant,
        in statistics: WorkerStatistics
    ) {
        let now = ContinuousClock.now
        inFlight.withLock { $0.claimStarts[step] = start }
        statistics.counters.increment(Name.claimed, ["namespace": namespace])
        time(Name.claimDuration, start.duration(to: now), ["namespace": namespace])
    }

    /// `count` steps claimed together in one transaction.
    static func claimsBatched(_ count: Int, in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.claimsBatched, by: count)
    }

    /// `count` claims found committed after their answer was lost.
    static func claimsRecovered(_ count: Int, in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.claimsRecovered, by: count)
    }

    /// A claim the database refused because this worker's lease had lapsed.
    static func claimRefusedForLease(in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.claimsRefusedForLease)
    }

    /// A delivery refused: its queue is not this worker's.
    static func deliveryRefused(in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.deliveriesRefused)
    }

    /// `count` queue reads made for notifications.
    package static func notifiedReads(_ count: Int = 1, in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.notifiedReads, by: count)
    }

    // MARK: - Namespace labels

    /// Namespaces served by a worker of this process: the only values a `namespace` label taken
    /// from a queue name may have (queue names can come from hostile notifications; each new
    /// label value would be a new series, kept for the life of the process).
    private static let servedNamespaces = Mutex<Set<String>>([])

    /// The label value of queues that are not a served namespace's `worker_<ns>_queue`.
    static let unservedNamespaceLabel = "unserved"

    /// Records the namespaces a worker of this process serves (a union: tests run several).
    static func serve(namespaces: [String]) {
        servedNamespaces.withLock { $0.formUnion(namespaces) }
    }

    /// The `namespace` label of `queue`: its namespace when served, else `unservedNamespaceLabel`.
    static func namespaceLabel(ofQueue queue: String) -> String {
        let namespace = QueueNames.namespace(ofWorkerQueue: queue)
        guard queue == QueueNames.workerQueue(namespace: namespace),
            servedNamespaces.withLock({ $0.contains(namespace) })
        else { return unservedNamespaceLabel }
        return namespace
    }

    /// A delivery that failed before a handler ran (`queue` is `worker_<ns>_queue`).
    package static func failure(queue: String, _ type: FailureType, in statistics: WorkerStatistics) {
        failure(namespace: namespaceLabel(ofQueue: queue), type, in: statistics)
    }

    /// A step processing failure of upstream's `type`.
    package static func failure(namespace: String, _ type: FailureType, in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.failures, ["namespace": namespace, "error_type": type.rawValue])
    }

    /// A poison message archived from `queue`.
    package static func poison(queue: String, in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.poisonMessages, ["namespace": namespaceLabel(ofQueue: queue)])
    }

    /// A stale message archived.
    package static func stale(namespace: String, in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.staleMessages, ["namespace": namespace])
    }

    /// A delivery left queued by load shedding.
    static func shed(queue: String, in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.claimsShed, ["namespace": namespaceLabel(ofQueue: queue)])
    }

    /// A failed poll of `queue`.
    static func pollFailed(queue: String, in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.pollFailures, ["namespace": namespaceLabel(ofQueue: queue)])
    }

    /// A notification ignored on the channel of `queue` (a served queue: the listener only
    /// listens on served namespaces' channels).
    static func notificationRejected(queue: String, in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.notificationsRejected, ["namespace": namespaceLabel(ofQueue: queue)])
    }

    /// `count` notifications lost to a full listener buffer.
    package static func notificationsDropped(_ count: Int, in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.notificationsDropped, by: count)
    }

    // MARK: - Dispatch and completion

    /// A handler produced `result` (it goes to the completion channel next).
    static func handlerFinished(_ step: ClaimedStep, _ result: StepExecutionResult) {
        _ = inFlight.withLock { $0.awaitingCompletion.insert(step.message.stepUUID) }
        let seconds =
            result.metadata.startedAt.map { result.metadata.completedAt.timeIntervalSince($0) }
            ?? Double(result.metadata.executionTimeMs) / 1000
        let handler = step.definition?.handler.callable ?? "unknown"
        record(Name.executionDuration, seconds: max(0, seconds), ["namespace": step.hydrated.namespace, "handler": handler])
    }

    /// The completion service is done with `completion` (stored, or given up); call once per result.
    static func completionFinished(_ completion: StepCompletion) {
        inFlight.withLock {
            $0.awaitingCompletion.remove(completion.step.message.stepUUID)
            $0.claimStarts.removeValue(forKey: completion.step.message.stepUUID)
        }
    }

    /// A storing attempt failed and will be retried.
    static func completionRetry(_ completion: StepCompletion, in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.completionRetries, ["namespace": completion.step.hydrated.namespace])
    }

    /// `count` results stored together in one transaction.
    static func completionsBatched(_ count: Int, in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.completionsBatched, by: count)
    }

    /// A result found stored by an earlier attempt whose answer was lost.
    static func completionRecovered(in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.completionsRecovered)
    }

    /// A finished step's claim-to-stored time (its outcome is counted by `resultStored`).
    static func executionTime(_ elapsed: Duration, in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.executionTime, by: max(0, Int(elapsed.inMilliseconds)))
    }

    /// The completion transaction ran: counts the outcome; `stored` is false when the step was no
    /// longer in progress (result dropped).
    static func resultStored(
        _ completion: StepCompletion, stored: Bool, since start: ContinuousClock.Instant,
        in statistics: WorkerStatistics
    ) {
        let now = ContinuousClock.now
        let namespace = completion.step.hydrated.namespace
        let result = completion.result
        let counters = statistics.counters
        counters.increment(Name.executions, ["namespace": namespace])
        if result.isSuccess {
            counters.increment(Name.successes, ["namespace": namespace])
        } else {
            failure(namespace: namespace, .handlerExecutionFailed, in: statistics)
            counters.increment(
                Name.handlerErrors,
                [
                    "namespace": namespace, "error_type": result.error?.errorType ?? "unknown",
                    "retryable": "\(result.isRetryable)",
                ])
        }
        guard stored else { return }
        counters.increment(Name.resultsSubmitted, ["namespace": namespace])
        time(Name.submissionDuration, start.duration(to: now), ["namespace": namespace])
        let claimStart = inFlight.withLock { $0.claimStarts[completion.step.message.stepUUID] } ?? completion.step.claimedAt
        time(Name.endToEndDuration, claimStart.duration(to: now), ["namespace": namespace])
    }

    // MARK: - Crash recovery

    /// This worker ran a crash-recovery scan (it is the fleet's elected scanner).
    static func recoveryScanned(in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.recoveryScans)
    }

    /// This worker retired a step of one of its own claims found committed late (`OrphanedClaimAudit`).
    static func orphanedClaimRetired(in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.orphanedClaimsRetired)
    }

    /// This worker stored the `worker_lost` result of a lost worker's step.
    static func stepRecovered(in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.stepsRecovered)
    }

    /// A result of this worker was not stored: its step was no longer `in_progress`.
    static func lateResultRefused(namespace: String, in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.lateResultsRefused, ["namespace": namespace])
    }

    // MARK: - Domain events

    /// A domain event outcome by delivery mode; a published `fast` or `broadcast` event was handed
    /// to `subscribers` in-process subscribers.
    static func domainEvent(
        _ mode: DeliveryMode, published: Bool, subscribers: Int = 0, in statistics: WorkerStatistics
    ) {
        statistics.counters.increment(
            published ? Name.domainEventsPublished : Name.domainEventsFailed,
            ["delivery_mode": mode.rawValue])
        if published, mode != .durable, subscribers > 0 {
            statistics.counters.increment(Name.domainEventSubscriberDeliveries, by: subscribers)
        }
    }

    /// A domain event skipped because its payload violates the declared schema.
    static func domainEventInvalid(_ mode: DeliveryMode, in statistics: WorkerStatistics) {
        statistics.counters.increment(Name.domainEventsInvalid, ["delivery_mode": mode.rawValue])
    }

    // MARK: - Helpers

    private static func time(_ label: String, _ duration: Duration, _ dimensions: KeyValuePairs<String, String>) {
        Metrics.Timer(label: label, dimensions: dimensions.map { ($0.key, $0.value) }, factory: factory)
            .recordNanoseconds(max(0, duration.inNanoseconds))
    }

    private static func record(_ label: String, seconds: Double, _ dimensions: KeyValuePairs<String, String>) {
        Metrics.Timer(label: label, dimensions: dimensions.map { ($0.key, $0.value) }, factory: factory)
            .recordNanoseconds(Int64(seconds * 1e9))
    }
}
