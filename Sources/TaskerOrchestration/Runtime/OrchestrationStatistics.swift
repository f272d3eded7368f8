import Synchronization

/// Counters of a running orchestration.
public final class OrchestrationStatistics: Sendable {
    private let results = Atomic<Int>(0)
    private let requests = Atomic<Int>(0)
    private let poison = Atomic<Int>(0)
    private let finalizations = Atomic<Int>(0)
    private let stale = Atomic<Int>(0)
    private let dlqEntries = Atomic<Int>(0)
    private let staleErrors = Atomic<Int>(0)
    private let duplicates = Atomic<Int>(0)
    private let rejectedNotifications = Atomic<Int>(0)
    private let droppedNotifications = Atomic<Int>(0)
    private let notifiedReads = Atomic<Int>(0)
    private let readPasses = Atomic<Int>(0)

    public init() {}

    /// Step result messages processed and archived.
    var resultsProcessed: Int { results.load(ordering: .relaxed) }
    /// Task requests turned into tasks.
    var taskRequestsProcessed: Int { requests.load(ordering: .relaxed) }
    /// Messages archived without effect (undecodable, unknown step, invalid results).
    public var poisonMessages: Int { poison.load(ordering: .relaxed) }

    /// Of `resultsProcessed`, results for a step no longer waiting for orchestration (duplicates, e.g.
    /// of a worker's start-up re-publish): settled without effect.
    public var duplicateResults: Int { duplicates.load(ordering: .relaxed) }

    /// Finalization messages (`orchestration_task_finalizations`) processed and archived.
    var finalizationsProcessed: Int { finalizations.load(ordering: .relaxed) }
    /// Stale tasks the staleness detector's sweeps returned (dry runs included).
    var staleTasksDetected: Int { stale.load(ordering: .relaxed) }
    /// Pending `tasks_dlq` entries those sweeps created.
    var dlqEntriesCreated: Int { dlqEntries.load(ordering: .relaxed) }
    /// Stale tasks those sweeps moved to `error`.
    var staleTasksTransitionedToError: Int { staleErrors.load(ordering: .relaxed) }

    /// Notifications not taken (`NotificationTriage`: another queue, unparseable, too long).
    public var notificationsRejected: Int { rejectedNotifications.load(ordering: .relaxed) }
    /// Notifications lost to a full listener buffer (each loss answered with a read of the queues).
    public var notificationsDropped: Int { droppedNotifications.load(ordering: .relaxed) }
    /// Messages read by id because a notification named them (each one round trip).
    var notifiedMessageReads: Int { notifiedReads.load(ordering: .relaxed) }

    func recordRejectedNotification() { rejectedNotifications.wrappingAdd(1, ordering: .relaxed) }
    func recordDroppedNotifications(_ count: Int) { droppedNotifications.wrappingAdd(count, ordering: .relaxed) }
    /// Passes of the dispatch loop over its queues (poll ticks, catch-ups, notifications of many ids).
    var queueReadPasses: Int { readPasses.load(ordering: .relaxed) }
    func recordReadPass() { readPasses.wrappingAdd(1, ordering: .relaxed) }
    func recordNotifiedRead() { notifiedReads.wrappingAdd(1, ordering: .relaxed) }
    func recordResult() { results.wrappingAdd(1, ordering: .relaxed) }
    func recordTaskRequest() { requests.wrappingAdd(1, ordering: .relaxed) }
    func recordDuplicateResult() { duplicates.wrappingAdd(1, ordering: .relaxed) }
    func recordPoison() { poison.wrappingAdd(1, ordering: .relaxed) }
    func recordFinalization() { finalizations.wrappingAdd(1, ordering: .relaxed) }
    func recordStaleTask(movedToDLQ: Bool, transitionedToError: Bool) {
        stale.wrappingAdd(1, ordering: .relaxed)
        if movedToDLQ { dlqEntries.wrappingAdd(1, ordering: .relaxed) }
        if transitionedToError { staleErrors.wrappingAdd(1, ordering: .relaxed) }
    }
}
