import Foundation
import Synchronization

/// A one-shot signal: the shutdown drain deadline has passed. Waiters resume when it fires (or at
/// once when it already has, or when their task is cancelled).
///
/// `HandlerDispatchService` owns it; the event system arms it when shutdown begins with
/// `timing.processing_timeout_seconds`; a handler still running when it fires gets a retryable
/// `handler_timeout` result, so no claimed step is left without a result by a drain that ends.
package final class DrainDeadline: Sendable {
    private let signal = OneShotSignal()
    private let timer = Mutex<Task<Void, Never>?>(nil)

    package init() {}

    /// True once the deadline has passed.
    package var hasFired: Bool { signal.isTriggered }

    /// Fires after `delay` unless fired earlier. Arming twice keeps the first timer.
    package func arm(after delay: Duration) {
        timer.withLock { timer in
            guard !signal.isTriggered, timer == nil else { return }
            timer = Task { [signal] in
                try? await Task.sleep(for: delay)
                if !Task.isCancelled { signal.trigger() }
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
    package func fire() { signal.trigger() }

    /// Returns when the deadline fires, or when the calling task is cancelled.
    package func wait() async { await signal.wait() }
}
