import Synchronization

/// A counting semaphore for async code: `acquire()` suspends (never blocks a thread) while all
/// permits are taken; waiters are served in FIFO order.
public final class AsyncSemaphore: Sendable {
    private struct State {
        var available: Int
        var waiters: [(id: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var nextID = 0
    }

    /// The number of permits.
    public let limit: Int
    private let state: Mutex<State>

    public init(permits: Int) {
        limit = max(1, permits)
        state = Mutex(State(available: max(1, permits)))
    }

    /// Permits currently held.
    public var inUse: Int { state.withLock { limit - $0.available } }

    /// Callers waiting for a permit.
    public var waiting: Int { state.withLock { $0.waiters.count } }

    /// Takes a permit, waiting for one if necessary.
    public func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                state.waiters.append((state.nextID, continuation))
                state.nextID += 1
                return false
            }
            if granted { continuation.resume() }
        }
    }

    /// Takes a permit only if one is free.
    public func tryAcquire() -> Bool {
        state.withLock { state in
            guard state.available > 0 else { return false }
            state.available -= 1
            return true
        }
    }

    /// Returns a permit (handing it straight to the first waiter, if any).
    public func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.available = min(limit, state.available + 1)
                return nil
            }
            return state.waiters.removeFirst().continuation
        }
        next?.resume()
    }
}
