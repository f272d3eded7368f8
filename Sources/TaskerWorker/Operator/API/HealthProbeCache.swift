import Synchronization

/// The checks of one health evaluation that cost a database round trip or a command-processor
/// hop (`database`, `command_processor`, `queue_processing`), with the status the command processor
/// answered.
package struct HealthProbes: Sendable {
    package var database: HealthCheck
    package var commandProcessor: HealthCheck
    var queueProcessing: HealthCheck
    package var status: WorkerStatus?
    /// Steps `in_progress` longer than the threshold, by worker (nil: not read in time).
    var staleInProgress: [StaleInProgressSteps]? = nil
}

/// One evaluation of `HealthProbes` shared by every probe of the operator surface (REST `/health/ready`,
/// `/health/detailed`, gRPC `WorkerHealthService`, `grpc.health.v1`): reused for `maxAge`, and
/// single-flight — callers arriving while an evaluation runs wait for that one instead of starting
/// their own. A flood of probes thus costs at most one evaluation (two connections of the operator
/// lane) per `maxAge`, and the evaluation is not cancelled when the request that started it goes away.
package final class HealthProbeCache: Sendable {
    private enum State {
        case empty
        case running(Task<HealthProbes, Never>)
        case cached(HealthProbes, at: ContinuousClock.Instant)
    }

    /// How long an evaluation is reused (the gRPC health watch interval).
    let maxAge: Duration
    private let state = Mutex<State>(.empty)
    /// The last settled evaluation (`settle`).
    private let previous = Mutex<HealthProbes?>(nil)

    package init(maxAge: Duration = .seconds(1)) {
        self.maxAge = maxAge
    }

    /// The latest evaluation younger than `maxAge`, the one running, or a new one by `evaluate`.
    package func value(_ evaluate: @escaping @Sendable () async -> HealthProbes) async -> HealthProbes {
        let now = ContinuousClock.now
        let lookup: Lookup = state.withLock { state in
            switch state {
            case .cached(let probes, let at) where now - at < maxAge:
                return .fresh(probes)
            case .running(let task):
                return .running(task)
            default:
                let task = Task { [weak self] in
                    let probes = await evaluate()
                    self?.state.withLock { $0 = .cached(probes, at: .now) }
                    return probes
                }
                state = .running(task)
                return .running(task)
            }
        }
        switch lookup {
        case .fresh(let probes): return probes
        case .running(let task): return await task.value
        }
    }

    /// `fresh` with each round-trip check that timed out while the same check answered in the
    /// previous evaluation replaced by that previous verdict, its message saying so; remembered for
    /// the next call. One slow answer on a loaded machine (a CPU-starved host, a checkpoint's I/O
    /// burst) thus does not take a working worker out of service; two in a row, one evaluation
    /// (≥ `maxAge`) apart, do. An error (refused connection, failed statement) counts at once.
    package func settle(_ fresh: HealthProbes) -> HealthProbes {
        previous.withLock { previous in
            var settled = fresh
            if let last = previous {
                settled.database = Self.settle(fresh.database, after: last.database)
                settled.commandProcessor = Self.settle(fresh.commandProcessor, after: last.commandProcessor)
                settled.queueProcessing = Self.settle(fresh.queueProcessing, after: last.queueProcessing)
                if fresh.commandProcessor.timedOut && !last.commandProcessor.timedOut { settled.status = last.status }
            }
            previous = settled
            return settled
        }
    }

    static func settle(_ check: HealthCheck, after last: HealthCheck) -> HealthCheck {
        guard check.timedOut, !last.timedOut else { return check }
        var kept = last
        kept.message = (check.message ?? "") + "; the previous answer stands until the next evaluation: " + (last.message ?? "")
        kept.durationMs = check.durationMs
        kept.lastChecked = check.lastChecked
        kept.timedOut = true
        return kept
    }

    private enum Lookup {
        case fresh(HealthProbes)
        case running(Task<HealthProbes, Never>)
    }
}
