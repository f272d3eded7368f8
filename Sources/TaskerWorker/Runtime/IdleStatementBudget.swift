import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres

/// The statements an idle worker sends PostgreSQL per second at most (no steps, no operator
/// requests; docs/capacity.md): every one goes through the pool's background lane, one at a time.
///
/// - the liveness lease: 4 renewals per lease (`LivenessTiming`: the lease lasts two thirds of
///   `[worker.crash_recovery] grace_period_ms`, renewed every quarter of that), so `6 / grace` in
///   seconds (1.5/s with the default 4 s);
/// - the poller, in Hybrid and PollingOnly mode (and whenever there is no LISTEN session): one read
///   per served namespace every `fallback_poller.polling_interval_ms` (EventDrivenOnly with its
///   listener connected: none);
/// - the crash-recovery scan: two statements every `scan_interval_ms` (the turn kept, then the scan),
///   by the worker holding the fleet's scanner turn only.
///
/// The LISTEN session's keepalive (one `SELECT 1` every `health_check_interval_seconds`) and the pool's
/// liveness checks (only for a connection the server wrote to while idle) are not counted: they run
/// on no pooled connection, or not at all when nothing happens.
package struct IdleStatementBudget: Sendable, Equatable {
    package var leaseRenewals: Double
    package var pollReads: Double
    package var recoveryScans: Double

    /// The budget of a worker with `configuration` serving `namespaces` namespaces; `scanner`:
    /// whether it holds the fleet's crash-recovery scanner turn.
    package init(configuration: TaskerConfiguration, namespaces: Int, scanner: Bool) {
        let worker = configuration.worker
        let grace = Duration.milliseconds(worker.crashRecovery.gracePeriodMs)
        leaseRenewals = 4 / LivenessTiming(grace: grace).leaseDuration.inSeconds
        let poller = worker.eventSystems.worker.metadata.fallbackPoller
        let mode = worker.eventSystems.worker.deploymentMode
        let listens = configuration.common.database.listenSessionURL != nil
        let polls =
            switch mode {
            case .pollingOnly: true
            case .hybrid: poller.enabled || !listens
            case .eventDrivenOnly: !listens
            case .disabled: false
            }
        let interval = Double(max(10, poller.pollingIntervalMs)) / 1000
        pollReads = polls ? Double(namespaces) / interval : 0
        recoveryScans = scanner && worker.crashRecovery.enabled ? 2000 / Double(max(100, worker.crashRecovery.scanIntervalMs)) : 0
    }

    /// Statements per second at most.
    package var perSecond: Double { leaseRenewals + pollReads + recoveryScans }
}
