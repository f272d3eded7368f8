import Foundation
import Synchronization
import TaskerPostgres

/// A one-shot signal: the shutdown drain deadline has passed. Waiters resume when it fires (or at
/// once when it already has, or when their task is cancelled).
///
/// `HandlerDispatchService` owns it; the event system arms it when shutdown begins with
/// `timing.processing_timeout_seconds`; a handler still running when it fires gets a retryable
/// `handler_timeout` result, so no claimed step is left without a result by a drain that ends.
package final class DrainDeadline: Sendable {
    private let signal = OneShotSignal()
    private let timer = Mutex<Task<Void, Never>?>(nil)
    /// Run once when the deadline fires (nil once it has).
    private let actions = Mutex<[@Sendable () -> Void]?>([])

    package init() {}

    /// True once the deadline has passed.
    var hasFired: Bool { signal.isTriggered }

    /// Fires after `delay` unless fired earlier. Arming twice keeps the first timer.
    package func arm(after delay: Duration) {
        timer.withLock { timer in
            guard !signal.isTriggered, timer == nil else { return }
            timer = Task { [self] in
                try? await Task.sleep(for: delay)
                if !Task.isCancelled { self.fire() }
            }
        }
    }

    /// Stops a pending timer (the drain finished in time).
    package func disarm() {
        timer.withLock { timer in
            timer?.cancel()
            timer = nil
        }
    }

    /// Fires now: every waiter resumes.
    package func fire() {
        signal.trigger()
        let due = actions.withLock { actions in
            defer { actions = nil }
            return actions ?? []
        }
        for action in due { action() }
    }

    /// Runs `action` when the deadline fires (at once when it already has): how the FFI dispatch
    /// channel gives its pending steps their drain result without a task waiting per step.
    func whenFired(_ action: @escaping @Sendable () -> Void) {
        let runNow = actions.withLock { actions -> Bool in
            guard actions != nil else { return true }
            actions?.append(action)
            return false
        }
        if runNow { action() }
    }

    /// Returns when the deadline fires, or when the calling task is cancelled.
    package func wait() async { await signal.wait() }
}
