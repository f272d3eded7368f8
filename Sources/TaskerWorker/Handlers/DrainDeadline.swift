import Foundation
import Synchronization

/// A one-shot signal: the shutdown drain deadline has passed. Waiters resume when it fires (or at
/// once when it already has, or when their task is cancelled).
///
/// `HandlerDispatchService` arms it when shutdown begins (the dispatch channel finishes) with
/// `timing.processing_timeout_seconds`; a handler still running when it fires gets a retryable
/// `handler_timeout` result, so no claimed step is left without a result by a drain that ends.
public final class DrainDeadline: Sendable {
    private struct State {
        var fired = false
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
        var timer: Task<Void, Never>?
    }
    private let state = Mutex(State())

    public init() {}

    /// True once the deadline has passed.
    public var hasFired: Bool { state.withLock { $0.fired } }

    /// Fires after `delay` unless fired earlier. Arming twice keeps the first timer.
    public func arm(after delay: Duration) {
        state.withLock { state in
            guard !state.fired, state.timer == nil else { return }
            state.timer = Task { [weak self] in
                try? await Task.sleep(for: delay)
                if !Task.isCancelled { self?.fire() }
            }
        }
    }

    /// Stops a pending timer (the drain finished in time).
    public func disarm() {
        state.withLock { state in
            state.timer?.cancel()
            state.timer = nil
        }
    }

    /// Fires now: every waiter resumes.
    public func fire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.fired else { return [] }
            state.fired = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns when the deadline fires, or when the calling task is cancelled.
    public func wait() async {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.fired || Task.isCancelled { return true }
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
