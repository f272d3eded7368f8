import Synchronization

/// A counter shared between tasks.
package final class Tally: Sendable {
    package init() {}

    private let value = Atomic<Int>(0)
    package var count: Int { value.load(ordering: .relaxed) }
    @discardableResult
    package func increment() -> Int { value.wrappingAdd(1, ordering: .relaxed).newValue }
}
