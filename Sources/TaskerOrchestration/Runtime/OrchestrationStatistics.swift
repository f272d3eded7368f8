import Atomics

/// Counters of a running orchestration.
public final class OrchestrationStatistics: Sendable {
    private let results = ManagedAtomic<Int>(0)
    private let requests = ManagedAtomic<Int>(0)
    private let poison = ManagedAtomic<Int>(0)
    private let finalizations = ManagedAtomic<Int>(0)
    private let stale = ManagedAtomic<Int>(0)
    private let dlqEntries = ManagedAtomic<Int>(0)
    private let staleErrors = ManagedAtomic<Int>(0)
    private let duplicates = ManagedAtomic<Int>(0)
    private let rejectedNotifications = ManagedAtomic<Int>(0)
    private let notifiedReads = ManagedAtomic<Int>(0)

    public init() {}

    /// Step result messages processed and archived.
    public var resultsProcessed: Int { results.load(ordering: .relaxed) }
    /// Task requests turned into tasks.
    public var taskRequestsProcessed: Int { requests.load(ordering: .relaxed) }
    /// Messages archived without effect (undecodable, unknown step, invalid results).
    public var poisonMessages: Int { poison.load(ordering: .relaxed) }

    /// Of `resultsProcessed`, results for a step no longer waiting for orchestration (duplicates, e.g.
    /// of a worker's start-up re-publish): settled without effect.
    public var duplicateResults: Int { duplicates.load(ordering: .relaxed) }

    /// Finalization messages (`orchestration_task_finalizations`) processed and archived.
    public var finalizationsProcessed: Int { finalizations.load(ordering: .relaxed) }
    /// Stale tasks the staleness detector's sweeps returned (dry runs included).
    public var staleTasksDetected: Int { stale.load(ordering: .relaxed) }
    /// Pending `tasks_dlq` entries those sweeps created.
    public var dlqEntriesCreated: Int { dlqEntries.load(ordering: .relaxed) }
    /// Stale tasks those sweeps moved to `error`.
    public var staleTasksTransitionedToError: Int { staleErrors.load(ordering: .relaxed) }

    /// Notifications not taken (`NotificationTriage`: another queue, unparseable, too long).
    public var notificationsRejected: Int { rejectedNotifications.load(ordering: .relaxed) }
    /// Messages read by id because a notification named them (each one round trip).
    public var notifiedMessageReads: Int { notifiedReads.load(ordering: .relaxed) }

    func recordRejectedNotification() { rejectedNotifications.wrappingIncrement(ordering: .relaxed) }
    func recordNotifiedRead() { notifiedReads.wrappingIncrement(ordering: .relaxed) }
    func recordResult() { results.wrappingIncrement(ordering: .relaxed) }
    func recordTaskRequest() { requests.wrappingIncrement(ordering: .relaxed) }
    func recordDuplicateResult() { duplicates.wrappingIncrement(ordering: .relaxed) }
    func recordPoison() { poison.wrappingIncrement(ordering: .relaxed) }
    func recordFinalization() { finalizations.wrappingIncrement(ordering: .relaxed) }
    func recordStaleTask(movedToDLQ: Bool, transitionedToError: Bool) {
        stale.wrappingIncrement(ordering: .relaxed)
        if movedToDLQ { dlqEntries.wrappingIncrement(ordering: .relaxed) }
        if transitionedToError { staleErrors.wrappingIncrement(ordering: .relaxed) }
    }
}
