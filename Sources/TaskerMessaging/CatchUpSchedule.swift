import Synchronization

/// Catch-up reads asked for later, the same for the worker's and the orchestration's PGMQ intakes:
/// after a read failed, after a notification that could not be read, after messages were left
/// queued (load shedding, database trouble). A request runs `onCatchUp` once its delay has passed,
/// rounded up to the next whole second of this schedule's clock; requests for the same second share
/// one timer, so a burst of requests (a flood of forged notifications, a thousand refused
/// deliveries) costs at most one sleeping task per second of delay, never one per request.
package final class CatchUpSchedule: Sendable {
    private let onCatchUp: @Sendable () -> Void
    /// The seconds (since `start`) a timer is already set for.
    private let pending = Mutex<Set<Int64>>([])
    private let start = ContinuousClock.now

    /// A schedule that calls `onCatchUp` (which asks the intake for a read of its queues).
    package init(onCatchUp: @escaping @Sendable () -> Void) {
        self.onCatchUp = onCatchUp
    }

    /// Asks for a catch-up read after `delay` (`.zero`: within this second).
    package func schedule(after delay: Duration) {
        let elapsed = start.duration(to: .now) + delay
        let second = elapsed.components.seconds + (elapsed.components.attoseconds > 0 ? 1 : 0)
        guard pending.withLock({ $0.insert(second).inserted }) else { return }
        let deadline = start.advanced(by: .seconds(second))
        Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            self.pending.withLock { _ = $0.remove(second) }
            self.onCatchUp()
        }
    }

    /// Timers set and not yet run (tests).
    package var pendingCount: Int { pending.withLock { $0.count } }
}
