import AsyncAlgorithms
import Foundation
import Logging
import ServiceLifecycle
import TaskerModel
import TaskerPostgres

/// What the staleness detector does (`[orchestration.dlq.staleness_detection]`).
public struct StalenessDetectionSettings: Sendable, Equatable {
    /// Run the detector (`dlq.enabled` and `staleness_detection.enabled`).
    public var enabled = true
    /// Time between sweeps; the first sweep runs at start (as upstream's interval timer).
    public var interval: Duration = .seconds(300)
    /// Stale tasks handled per sweep at most.
    public var batchSize = 100
    /// Only report (and log) what would be moved.
    public var dryRun = false
    /// Per-state thresholds (minutes), overridden per template by `lifecycle.max_*_minutes`.
    public var waitingForDependenciesMinutes = 60
    public var waitingForRetryMinutes = 30
    public var stepsInProcessMinutes = 30
    /// A task in a monitored state older than this is stale whatever its time in the state.
    public var taskMaxLifetimeHours = 24

    public init() {}

    /// The settings of `[orchestration.dlq]`.
    public init(configuration dlq: OrchestrationConfiguration.DLQSettings) {
        let detection = dlq.stalenessDetection
        enabled = dlq.enabled && detection.enabled
        interval = .seconds(detection.detectionIntervalSeconds)
        batchSize = detection.batchSize
        dryRun = detection.dryRun
        waitingForDependenciesMinutes = detection.thresholds.waitingForDependenciesMinutes
        waitingForRetryMinutes = detection.thresholds.waitingForRetryMinutes
        stepsInProcessMinutes = detection.thresholds.stepsInProcessMinutes
        taskMaxLifetimeHours = detection.thresholds.taskMaxLifetimeHours
    }

    var sweepParameters: StalenessRepository.SweepParameters {
        .init(
            dryRun: dryRun, batchSize: batchSize, waitingForDependenciesMinutes: waitingForDependenciesMinutes,
            waitingForRetryMinutes: waitingForRetryMinutes, stepsInProcessMinutes: stepsInProcessMinutes,
            taskMaxLifetimeHours: taskMaxLifetimeHours)
    }
}

/// The staleness detector (upstream `StalenessDetector`, TAS-49) as a `Service`: every interval (and
/// once at start) one sweep of upstream's `tasker.detect_and_transition_stale_tasks`. A task whose
/// current state is `waiting_for_dependencies`, `waiting_for_retry` or `steps_in_process` for longer
/// than its threshold (the template's `lifecycle` override, else the configured one), or older than
/// the maximum lifetime while in one of them, gets a pending `tasks_dlq` entry (reason
/// `staleness_timeout`, a snapshot of the task and its steps) and moves to `error`. At most
/// `batchSize` tasks per sweep, one orchestration sweeping at a time (the others skip), each task
/// counted in ``OrchestrationStatistics`` and logged at warning. A failed sweep is logged and the next
/// one runs at the next interval.
final class StalenessDetector: Service, Sendable {
    public let settings: StalenessDetectionSettings
    private let pool: PostgresConnectionPool
    private let statistics: OrchestrationStatistics
    private let logger: Logger

    public init(
        pool: PostgresConnectionPool, settings: StalenessDetectionSettings, statistics: OrchestrationStatistics,
        logger: Logger = Logger(label: "tasker.orchestration.staleness")
    ) {
        self.pool = pool
        self.settings = settings
        self.statistics = statistics
        self.logger = logger
    }

    /// Sweeps at start and every interval until graceful shutdown (or cancellation); when disabled,
    /// only waits for the shutdown.
    public func run() async throws {
        guard settings.enabled else {
            logger.info("staleness detector disabled")
            try? await gracefulShutdown()
            return
        }
        logger.info(
            "staleness detector started",
            metadata: [
                "interval_seconds": "\(settings.interval.components.seconds)", "batch_size": "\(settings.batchSize)",
                "dry_run": "\(settings.dryRun)",
            ])
        await sweepLogged()
        for await _ in AsyncTimerSequence(interval: settings.interval, clock: .continuous).cancelOnGracefulShutdown() {
            await sweepLogged()
        }
    }

    private func sweepLogged() async {
        do {
            _ = try await sweep()
        } catch {
            logger.error("staleness sweep failed; next sweep at the next interval", metadata: ["error": "\(error)"])
        }
    }

    /// One sweep: the stale tasks handled (empty when another orchestration is sweeping).
    @discardableResult
    public func sweep() async throws -> [StaleTaskOutcome] {
        let parameters = settings.sweepParameters
        let outcomes = try await pool.withConnection { c in
            try await c.transaction { c in try StalenessRepository.sweep(c, parameters) }
        }
        guard let outcomes else {
            logger.debug("staleness sweep skipped: another orchestration is sweeping")
            return []
        }
        for outcome in outcomes { record(outcome) }
        return outcomes
    }

    private func record(_ outcome: StaleTaskOutcome) {
        statistics.recordStaleTask(movedToDLQ: outcome.movedToDLQ, transitionedToError: outcome.transitionedToError)
        let metadata: Logger.Metadata = [
            "task_uuid": "\(outcome.taskUUID)", "namespace": "\(outcome.namespace)", "task_name": "\(outcome.taskName)",
            "state": "\(outcome.state)", "minutes_in_state": "\(outcome.minutesInState)",
            "threshold_minutes": "\(outcome.thresholdMinutes)", "reason": "staleness_timeout",
            "action": "\(outcome.action)",
        ]
        if settings.dryRun {
            logger.warning("stale task (dry run: not moved to the DLQ)", metadata: metadata)
        } else if outcome.movedToDLQ || outcome.transitionedToError {
            logger.warning("stale task moved to the DLQ", metadata: metadata)
        } else {
            // Its state changed, or another sweep (e.g. upstream's detector) handled it first.
            logger.info("stale task already handled elsewhere", metadata: metadata)
        }
    }
}
