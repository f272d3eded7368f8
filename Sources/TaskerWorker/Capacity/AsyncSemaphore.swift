import Synchronization

/// A counting semaphore for async code: `acquire()` suspends (never blocks a thread) while all
/// permits are taken; waiters are served in FIFO order. The counting is `PermitQueue`'s (the same
/// as the handler permits of `WorkerCapacity`); this class keeps the waiters' continuations.
///
/// `acquire()` honours cancellation: a task cancelled while it waits (or before it asks) leaves the
/// queue and gets `CancellationError`, holding nothing; no permit is leaked either way.
final class AsyncSemaphore: Sendable {
    private struct State {
        var permits: PermitQueue
        var waiters: [Int: CheckedContinuation<Void, any Error>] = [:]
        var nextID = 0
    }

    /// The number of permits.
    package let limit: Int
    private let state: Mutex<State>

    package init(permits: Int) {
        let queue = PermitQueue(limit: permits)
        limit = queue.limit
        state = Mutex(State(permits: queue))
    }

    /// Permits currently held.
    var inUse: Int { state.withLock { $0.permits.inUse } }

    /// Callers waiting for a permit.
    package var waiting: Int { state.withLock { $0.permits.waiters.count } }

    /// Takes a permit, waiting for one if necessary. Throws `CancellationError` (holding no permit)
    /// when the calling task is cancelled before or while it waits.
    package func acquire() async throws {
        let id = state.withLock { state -> Int in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // The cancellation flag is set before the handler runs: a cancellation that comes
                // before this lock is seen here, one after it finds the waiter queued.
                let decision = state.withLock { state -> PermitQueue.Acquisition in
                    let decision = state.permits.acquire(waiter: id, isCancelled: Task.isCancelled)
                    if decision == .queued { state.waiters[id] = continuation }
                    return decision
                }
                switch decision {
                case .granted: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .queued: break
                }
            }
        } onCancel: {
            // Still queued: it leaves the queue and holds nothing. Already granted: it keeps the
            // permit (its caller releases it as usual).
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard state.permits.cancel(waiter: id) else { return nil }
                return state.waiters.removeValue(forKey: id)
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Takes a permit only if one is free.
    func tryAcquire() -> Bool {
        state.withLock { $0.permits.tryAcquire() }
    }

    /// Returns a permit (handing it straight to the first waiter, if any).
    package func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            state.permits.release().flatMap { state.waiters.removeValue(forKey: $0) }
        }
        next?.resume()
    }
}
