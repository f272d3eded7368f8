import Synchronization

/// A one-way signal: `trigger()` once, and every current and future `wait()` returns. Used for
/// shutdown (the gRPC streams) and for the drain deadline.
package final class OneShotSignal: Sendable {
    private struct State {
        var triggered = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    package init() {}

    /// Whether `trigger()` was called.
    package var isTriggered: Bool { state.withLock { $0.triggered } }

    /// Releases every waiter, now and later. Idempotent.
    package func trigger() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.triggered = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the signal is triggered, or when the calling task is cancelled.
    package func wait() async {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.triggered || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}
