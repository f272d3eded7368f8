import Synchronization

/// A counting semaphore for async code: `acquire()` suspends (never blocks a thread) while all
/// permits are taken; waiters are served in FIFO order. The counting is `PermitQueue`'s (the same
/// as the handler permits of `WorkerCapacity`); this class keeps the waiters' continuations.
package final class AsyncSemaphore: Sendable {
    private struct State {
        var permits: PermitQueue
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
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
    package var inUse: Int { state.withLock { $0.permits.inUse } }

    /// Callers waiting for a permit.
    package var waiting: Int { state.withLock { $0.permits.waiters.count } }

    /// Takes a permit, waiting for one if necessary.
    package func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                let id = state.nextID
                state.nextID += 1
                guard state.permits.acquire(waiter: id) == .queued else { return true }
                state.waiters[id] = continuation
                return false
            }
            if granted { continuation.resume() }
        }
    }

    /// Takes a permit only if one is free.
    package func tryAcquire() -> Bool {
        state.withLock { $0.permits.tryAcquire() }
    }

    /// Returns a permit (handing it straight to the first waiter, if any).
    package func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.permits.release().flatMap { state.waiters.removeValue(forKey: $0) }
        }
        next?.resume()
    }
}
