import Synchronization

/// The process's one embedded worker and its lifecycle: idle → starting → running → stopping →
/// idle. A worker is reachable (`current`) while running and while stopping, so foreign handlers
/// can complete their events during the drain.
enum EmbeddedWorkerSlot {
    private enum Phase {
        case idle
        case starting
        case running(EmbeddedWorker)
        case stopping(EmbeddedWorker)
    }

    private static let phase = Mutex<Phase>(.idle)

    /// Claims the slot for a bootstrap; ALREADY_RUNNING when a worker runs or starts.
    static func beginStarting() throws(FFIError) {
        try phase.withLock { phase throws(FFIError) in
            switch phase {
            case .idle: phase = .starting
            case .starting:
                throw FFIError(.alreadyRunning, "tasker_worker_bootstrap: a worker is starting in this process")
            case .running, .stopping:
                throw FFIError(.alreadyRunning, "tasker_worker_bootstrap: a worker already runs in this process (one per process)")
            }
        }
    }

    /// The bootstrap ended: with the worker, or (nil) failed.
    static func finishStarting(_ worker: EmbeddedWorker?) {
        phase.withLock { $0 = worker.map { .running($0) } ?? .idle }
    }

    /// The worker, while running or stopping; with `serving`, only until its run has ended (a
    /// poll then answers NOT_RUNNING at once instead of waiting for events that cannot come).
    static func current(serving: Bool = false) throws(FFIError) -> EmbeddedWorker {
        let worker = phase.withLock { phase -> EmbeddedWorker? in
            switch phase {
            case .running(let worker), .stopping(let worker): worker
            case .idle, .starting: nil
            }
        }
        guard let worker, !serving || worker.isRunning else { throw FFIError.notRunning }
        return worker
    }

    /// Moves a running worker to stopping and returns it (also when already stopping); nil when idle.
    static func beginStopping() -> EmbeddedWorker? {
        phase.withLock { phase -> EmbeddedWorker? in
            switch phase {
            case .running(let worker):
                phase = .stopping(worker)
                return worker
            case .stopping(let worker): return worker
            case .idle, .starting: return nil
            }
        }
    }

    /// The worker stopped: the slot is free again (unless another worker took it meanwhile).
    static func stopped(_ worker: EmbeddedWorker) {
        phase.withLock { phase in
            if case .stopping(let current) = phase, current === worker { phase = .idle }
        }
    }
}
