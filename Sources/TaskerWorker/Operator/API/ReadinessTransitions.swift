import Logging
import Synchronization

/// Logs when the worker's readiness changes, naming the checks that are not healthy: a probe that
/// flips a pod out of service leaves a line saying why in the worker's own log (the probe's body
/// goes to the orchestrator of the pod, not to the log). Only changes are logged, so a flood of
/// probes costs nothing in the log.
final class ReadinessTransitions: Sendable {
    private let last = Mutex<Bool?>(nil)
    private let logger: Logger

    package init(logger: Logger = Logger(label: "tasker.health")) {
        self.logger = logger
    }

    /// Records one readiness verdict; logs when it differs from the previous one (the first ready
    /// verdict at info, every turn to not ready at warning with the failing checks).
    package func record(_ checks: WorkerReadinessChecks) {
        let ready = checks.allHealthy
        let previous = last.withLock { state in
            defer { state = ready }
            return state
        }
        guard previous != ready else { return }
        if ready {
            logger.info("worker is ready", metadata: previous == nil ? [:] : ["was": "not_ready"])
            return
        }
        let failing = [
            ("database", checks.database), ("command_processor", checks.commandProcessor),
            ("queue_processing", checks.queueProcessing),
        ]
        .filter { $0.1.verdict != .healthy }
        .map { "\($0.0)=\($0.1.verdict): \($0.1.message ?? "")" }
        logger.warning("worker is not ready", metadata: ["failing": "\(failing.joined(separator: "; "))"])
    }
}
