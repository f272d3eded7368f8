import Synchronization

/// A one-way signal: `trigger()` once, and every current and future `wait()` returns. Used for
/// shutdown (the gRPC streams), the drain deadline, and a consumer's or a connection's stop
/// (`sleep(for:)`: the one "pause unless stopped" of the retry loops).
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

    /// Runs `body` until it returns, or until the signal is triggered (at once when it already
    /// was) or the calling task is cancelled: then `body`'s task is cancelled, awaited, and nil is
    /// returned. `body` must end soon after its cancellation (a sleep, a wait for a state change).
    package func unlessTriggered<T: Sendable>(_ body: @escaping @Sendable () async -> T) async -> T? {
        if isTriggered || Task.isCancelled { return nil }
        return await withTaskGroup(of: T?.self) { group in
            group.addTask { await body() }
            group.addTask {
                await self.wait()
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return isTriggered ? nil : first
        }
    }

    /// Waits `delay`, or less when the signal is triggered first or the calling task is cancelled:
    /// the one pause of the retry loops that must not outlast a stop (a consumer's backoff, a publish
    /// retry, a re-publish's retry). Returns true when the whole delay passed and the signal was not
    /// triggered, false when the caller should stop.
    @discardableResult
    package func sleep(for delay: Duration) async -> Bool {
        let slept = await unlessTriggered { (try? await Task.sleep(for: delay)) != nil }
        return slept == true && !isTriggered && !Task.isCancelled
    }
}
