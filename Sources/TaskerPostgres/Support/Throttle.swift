import Dispatch
import Synchronization

/// Lets an action through at most once per `interval` (for warnings that would otherwise repeat
/// on every message under load).
package final class Throttle: Sendable {
    private let intervalNanoseconds: Int64
    private let last = Atomic<Int64>(Int64.min / 2)

    package init(interval: Duration) {
        intervalNanoseconds = interval.inNanoseconds
    }

    /// The next ``allow()`` lets its action through, whenever it comes.
    package func reset() {
        last.store(Int64.min / 2, ordering: .relaxed)
    }

    package func allow() -> Bool {
        let now = Int64(DispatchTime.now().uptimeNanoseconds)
        let previous = last.load(ordering: .relaxed)
        guard now - previous >= intervalNanoseconds else { return false }
        return last.compareExchange(expected: previous, desired: now, ordering: .relaxed).exchanged
    }
}
