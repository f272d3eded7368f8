import Foundation
import TaskerHandlerSDK
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Computes the health bodies (`/health…` and gRPC `WorkerHealthService`) from the running worker.
///
/// Readiness (every check exactly `healthy`, else 503; a check that merely timed out once keeps its
/// previous verdict for one evaluation, see `HealthProbeCache.settle`):
/// - `database`: `SELECT 1` through the pool within `thresholds.databaseTimeout`;
/// - `command_processor` (upstream's name): the worker's status (`WorkerRuntime.status()`) is read within
///   `thresholds.commandProcessorTimeout`, the executor takes steps, and the event system runs with
///   its listener connected or its poller reading successfully;
/// - `queue_processing`: the depth of this worker's own `worker_<ns>_queue`s (pgmq metrics);
/// - `command_processor` is also unhealthy while a step result has stayed unstored longer than
///   `worker.result_storage.unstored_alert_seconds` (`ResultStorageMonitor`).
/// The database goes through the pool's `.operator` lane (its own small budget). With `shared`
/// (the servers pass `runtime.healthProbes`), the checks that cost a round trip are evaluated once
/// per second for every probe together (`HealthProbeCache`).
/// Detailed health adds `event_system`, `step_processing` (failure rate from `WorkerStatistics`) and
/// `circuit_breakers` (none are built in: reported as such, healthy).
/// Messages name a failure's class only (`OperatorErrorText`), never the database's text or a URL: the
/// pool and the listener log the detail.
package struct WorkerHealthService: Sendable {
    package let runtime: WorkerRuntime
    package let thresholds: HealthThresholds
    /// The evaluation shared between probes; nil: each call evaluates afresh.
    package let shared: HealthProbeCache?

    package init(runtime: WorkerRuntime, thresholds: HealthThresholds = .default, shared: HealthProbeCache? = nil) {
        self.runtime = runtime
        self.thresholds = thresholds
        self.shared = shared
    }

    /// `GET /health`: always `healthy` while the process answers.
    package func basic() -> BasicHealthResponse {
        BasicHealthResponse(status: "healthy", workerID: runtime.identity.publicID)
    }

    /// `GET /health/live`: always `alive` while the process answers.
    package func liveness() -> BasicHealthResponse {
        BasicHealthResponse(status: "alive", workerID: runtime.identity.publicID)
    }

    /// `GET /health/ready`: `status` is `ready` or `not_ready`; see `ReadinessResponse.isReady`.
    package func readiness() async -> ReadinessResponse {
        let probes = await probes()
        let checks = WorkerReadinessChecks(
            database: probes.database, commandProcessor: probes.commandProcessor,
            queueProcessing: probes.queueProcessing)
        runtime.readinessTransitions.record(checks)
        return ReadinessResponse(
            status: checks.allHealthy ? "ready" : "not_ready", timestamp: Date(), workerID: runtime.identity.publicID,
            checks: checks, systemInfo: await systemInfo(status: probes.status))
    }

    /// `GET /health/detailed`: `healthy` when all six checks are, else `degraded`.
    package func detailed() async -> DetailedHealthResponse {
        let probes = await probes()
        let checks = WorkerDetailedChecks(
            database: probes.database, commandProcessor: probes.commandProcessor, queueProcessing: probes.queueProcessing,
            eventSystem: checkEventSystem(), stepProcessing: checkStepProcessing(), circuitBreakers: checkCircuitBreakers())
        let healthy = checks.all.allSatisfy { $0.verdict == .healthy }
        return DetailedHealthResponse(
            status: healthy ? "healthy" : "degraded", timestamp: Date(), workerID: runtime.identity.publicID,
            checks: checks, systemInfo: await systemInfo(status: probes.status), distributedCache: DistributedCacheInfo.none,
            stepRecovery: stepRecovery(probes.staleInProgress))
    }

    /// `step_recovery`: liveness, recovery counts and the long-running `in_progress` steps.
    func stepRecovery(_ stale: [StaleInProgressSteps]?) -> StepRecoveryHealth {
        let stats = runtime.statistics.snapshot
        let recovery = runtime.configuration.worker.crashRecovery
        return StepRecoveryHealth(
            livenessLeaseHeld: runtime.dispatch.capacity.holdsLiveness, scannerEnabled: recovery.enabled,
            stepsRecovered: stats.stepsRecovered, lateResultsRefused: stats.lateResultsRefused,
            inProgressThresholdSeconds: recovery.staleInProgressThresholdSeconds,
            staleInProgressSteps: stale.map { $0.reduce(0) { $0 + $1.steps } }, staleInProgressByWorker: stale)
    }

    /// The checks that cost a round trip (shared when `shared` is set), with result storage folded
    /// into `command_processor` (read fresh: it costs nothing).
    package func probes() async -> HealthProbes {
        var probes: HealthProbes
        let history = runtime.healthProbes
        if let shared {
            let service = self
            probes = await shared.value { history.settle(await service.evaluateProbes()) }
        } else {
            probes = history.settle(await evaluateProbes())
        }
        probes.commandProcessor = Self.adding(checkResultStorage(), to: probes.commandProcessor)
        if !runtime.dispatch.capacity.holdsLiveness {
            probes.commandProcessor = Self.adding(
                HealthCheck(
                    status: .degraded,
                    message:
                        "\(runtime.dispatch.capacity.livenessProblem ?? "liveness lease not held"): not claiming steps until it is renewed",
                    durationMs: 0),
                to: probes.commandProcessor, label: "liveness")
        }
        return probes
    }

    /// Evaluates `database`, `command_processor` and `queue_processing` now, concurrently.
    func evaluateProbes() async -> HealthProbes {
        async let database = checkDatabase()
        async let commandProcessor = checkCommandProcessor()
        // The stale in_progress report on the queue metrics' connection: still two operator
        // acquires per evaluation.
        async let queuesAndStale = checkQueueProcessing(withStaleReport: true)
        let (processor, status) = await commandProcessor
        let (queues, stale) = await queuesAndStale
        return HealthProbes(
            database: await database, commandProcessor: processor, queueProcessing: queues,
            status: status, staleInProgress: stale)
    }

    /// Unhealthy while a step result has been unstored for longer than the monitor's threshold.
    func checkResultStorage() -> HealthCheck {
        let monitor = runtime.resultStorage
        let snapshot = monitor.snapshot()
        guard snapshot.overdue > 0 else {
            return HealthCheck(status: .healthy, message: "\(snapshot.pending) step results being stored", durationMs: 0)
        }
        let message =
            "\(snapshot.overdue) step results unstored for more than \(monitor.alertAfter) "
            + "(oldest \(Int(snapshot.oldest.components.seconds)) s; last error: \(snapshot.lastError ?? "none"))"
        return HealthCheck(status: .unhealthy, message: message, durationMs: 0)
    }

    /// `check` judged with `extra` too: the worse verdict, and `extra`'s message when it is not healthy.
    static func adding(_ extra: HealthCheck, to check: HealthCheck, label: String = "result storage") -> HealthCheck {
        guard extra.verdict != .healthy else { return check }
        return HealthCheck(
            status: max(check.verdict, extra.verdict),
            message: [check.message, "\(label): " + (extra.message ?? "")].compactMap { $0 }.joined(separator: "; "),
            durationMs: check.durationMs, lastChecked: check.lastChecked)
    }

    // MARK: - Checks

    /// `SELECT 1` through the pool, bounded by `thresholds.databaseTimeout`.
    func checkDatabase() async -> HealthCheck {
        let clock = Timing()
        let pool = runtime.pool
        switch await withDeadline(thresholds.databaseTimeout, { _ = try await pool.query("SELECT 1", lane: .operator) }) {
        case .value:
            return HealthCheck(status: .healthy, message: "Database connection successful", durationMs: clock.elapsedMs)
        case .failed(let error):
            return HealthCheck(
                status: .unhealthy, message: "Database connection failed: \(OperatorErrorText.summary(error))", durationMs: clock.elapsedMs)
        case .timedOut:
            return .timedOut("Database did not answer SELECT 1 within \(thresholds.databaseTimeout)", durationMs: clock.elapsedMs)
        }
    }

    /// Reads the worker's status (bounded) and judges the intake with it (upstream's `command_processor` check).
    /// Also returns the status, for `system_info`.
    func checkCommandProcessor() async -> (HealthCheck, WorkerStatus?) {
        let clock = Timing()
        let runtime = runtime
        let answer = await withDeadline(thresholds.commandProcessorTimeout) { await runtime.status() }
        guard case .value(let status) = answer else {
            let message = "Command processor did not answer a status command within \(thresholds.commandProcessorTimeout)"
            return (.timedOut(message, durationMs: clock.elapsedMs), nil)
        }
        let events = runtime.eventSystem.status
        let verdict: HealthStatus
        if !events.running {
            verdict = .unhealthy
        } else if !status.acceptingSteps || !events.isReceiving {
            verdict = .degraded
        } else {
            verdict = .healthy
        }
        let message =
            "Command processor answered; accepting steps: \(status.acceptingSteps) "
            + "(\(status.handlerPermitsInUse)/\(status.handlerPermits) handler permits in use); event system: "
            + Self.describe(events)
        return (HealthCheck(status: verdict, message: message, durationMs: clock.elapsedMs), status)
    }

    /// The summed depth of this worker's own queues (`pgmq.metrics` per `worker_<ns>_queue`; a queue
    /// that does not exist is left out).
    func checkQueueProcessing() async -> HealthCheck {
        await checkQueueProcessing(withStaleReport: false).check
    }

    /// `checkQueueProcessing`, and with `withStaleReport` on the same operator connection the steps
    /// `in_progress` longer than `worker.crash_recovery.stale_in_progress_threshold_seconds` by
    /// worker (`step_recovery`; nil when not read in time).
    func checkQueueProcessing(withStaleReport: Bool) async -> (check: HealthCheck, stale: [StaleInProgressSteps]?) {
        let clock = Timing()
        let queues = runtime.eventSystem.settings.namespaces.map(QueueNames.workerQueue(namespace:))
        let noQueues = HealthCheck(status: .healthy, message: "No namespaces, no queues to read", durationMs: clock.elapsedMs)
        guard !queues.isEmpty || withStaleReport else { return (noQueues, nil) }
        let pool = runtime.pool
        let queuePool = runtime.queuePool
        let threshold = runtime.configuration.worker.crashRecovery.staleInProgressThresholdSeconds
        let broker = runtime.broker
        let outcome = await withDeadline(thresholds.queueMetricsTimeout) {
            // RabbitMQ: the depths by passive declare on the broker (the queues are not in PGMQ).
            let brokerDepths = queues.isEmpty ? nil : await broker?.queueDepths()
            if broker != nil, !queues.isEmpty, brokerDepths == nil { throw BrokerNotConnected() }
            // The queues' own database: their depths from there.
            let separateDepths: [OwnQueueDepth]? =
                brokerDepths != nil || queues.isEmpty || queuePool === pool
                ? nil
                : try await queuePool.withConnection(lane: .operator) { c in
                    try await PGMQ.queueMetrics(c, queues: queues).map { OwnQueueDepth(queue: $0.queue, depth: Int64($0.depth)) }
                }
            return try await pool.withConnection(lane: .operator) { c in
                let depths =
                    if let separateDepths {
                        separateDepths
                    } else if let brokerDepths {
                        queues.map { OwnQueueDepth(queue: $0, depth: Int64(brokerDepths[$0] ?? 0)) }
                    } else {
                        queues.isEmpty
                            ? []
                            : try await PGMQ.queueMetrics(c, queues: queues).map {
                                OwnQueueDepth(queue: $0.queue, depth: Int64($0.depth))
                            }
                    }
                let stale = withStaleReport ? try? await RecoveryRepository.staleInProgress(c, thresholdSeconds: threshold) : nil
                return (depths, stale)
            }
        }
        switch outcome {
        case .value(let (depths, stale)):
            guard !queues.isEmpty else { return (noQueues, stale) }
            let total = depths.reduce(0) { $0 + Int($1.depth) }
            let detail = depths.map { "\($0.queue)=\($0.depth)" }.joined(separator: ", ")
            return (
                HealthCheck(
                    status: thresholds.queueDepthStatus(total),
                    message: "Own queues total depth: \(total) (\(detail))", durationMs: clock.elapsedMs),
                stale
            )
        case .failed(let error):
            return (
                HealthCheck(
                    status: .unhealthy, message: "Queue metrics unavailable: \(OperatorErrorText.summary(error))",
                    durationMs: clock.elapsedMs),
                nil
            )
        case .timedOut:
            return (.timedOut("Queue metrics not read within \(thresholds.queueMetricsTimeout)", durationMs: clock.elapsedMs), nil)
        }
    }

    /// Healthy while the event system runs and receives (listener connected or polling succeeding).
    func checkEventSystem() -> HealthCheck {
        let clock = Timing()
        let events = runtime.eventSystem.status
        let verdict: HealthStatus = !events.running ? .unhealthy : events.isReceiving ? .healthy : .degraded
        return HealthCheck(status: verdict, message: Self.describe(events), durationMs: clock.elapsedMs)
    }

    /// The failure rate of the steps this worker has run (`WorkerStatistics`).
    func checkStepProcessing() -> HealthCheck {
        let clock = Timing()
        let stats = runtime.statistics.snapshot
        let rate = stats.failureRate
        let message =
            "\(stats.totalExecuted) steps executed, \(stats.totalSucceeded) succeeded, \(stats.totalFailed) failed ("
            + String(format: "%.1f", rate * 100) + " % failure rate)"
        return HealthCheck(status: thresholds.failureRateStatus(rate), message: message, durationMs: clock.elapsedMs)
    }

    /// This worker has no circuit breakers: an empty set, which is healthy.
    func checkCircuitBreakers() -> HealthCheck {
        HealthCheck(status: .healthy, message: "No circuit breakers configured", durationMs: 0)
    }

    /// `system_info`; `status` is the worker's status (nil when it did not answer).
    func systemInfo(status: WorkerStatus?) async -> WorkerSystemInfo {
        let pool = await runtime.pool.statistics
        let detail = PoolDetail(pool)
        let queueDetail = runtime.queuePool === runtime.pool ? detail : PoolDetail(await runtime.queuePool.statistics)
        return WorkerSystemInfo(
            version: TaskerWorkerVersion.current, environment: runtime.configuration.common.execution.environment,
            uptimeSeconds: max(0, Int(Date().timeIntervalSince(runtime.startedAt))), workerType: "command_processor",
            databasePoolSize: pool.active + pool.idle,
            commandProcessorActive: runtime.eventSystem.status.running && (status?.acceptingSteps ?? false),
            supportedNamespaces: await runtime.templates.supportedNamespaces,
            poolUtilization: PoolUtilizationInfo(taskerPool: detail, pgmqPool: queueDetail))
    }

    // MARK: - Helpers

    static func describe(_ events: WorkerEventSystemStatus) -> String {
        var parts = ["mode \(events.mode.rawValue)", events.running ? "running" : "not running"]
        if let listener = events.listenerState {
            switch listener {
            case .connected: parts.append("listener connected")
            case .reconnecting(let attempt, _): parts.append("listener reconnecting (attempt \(attempt))")
            case .idle: parts.append("listener not started")
            case .connecting: parts.append("listener connecting")
            case .stopped: parts.append("listener stopped")
            }
        }
        if events.pollingActive {
            parts.append(events.lastPollSucceeded ? "polling active" : "polling active, last read failed")
        }
        if let broker = events.brokerState { parts.append("RabbitMQ \(broker)") }
        return parts.joined(separator: ", ")
    }
}

/// One queue's depth, from PGMQ's metrics or the broker's passive declare.
private struct OwnQueueDepth: Sendable {
    let queue: String
    let depth: Int64
}

/// Milliseconds since creation, for `duration_ms`.
struct Timing {
    private let start = ContinuousClock.now

    var elapsedMs: Int {
        Int((ContinuousClock.now - start).inMilliseconds)
    }
}
