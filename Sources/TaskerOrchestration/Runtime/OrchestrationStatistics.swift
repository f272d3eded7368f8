import Atomics

/// Counters of a running orchestration.
public final class OrchestrationStatistics: Sendable {
    private let results = ManagedAtomic<Int>(0)
    private let requests = ManagedAtomic<Int>(0)
    private let poison = ManagedAtomic<Int>(0)

    public init() {}

    /// Step result messages processed and archived.
    public var resultsProcessed: Int { results.load(ordering: .relaxed) }
    /// Task requests turned into tasks.
    public var taskRequestsProcessed: Int { requests.load(ordering: .relaxed) }
    /// Messages archived without effect (undecodable, unknown step, invalid results).
    public var poisonMessages: Int { poison.load(ordering: .relaxed) }

    func recordResult() { results.wrappingIncrement(ordering: .relaxed) }
    func recordTaskRequest() { requests.wrappingIncrement(ordering: .relaxed) }
    func recordPoison() { poison.wrappingIncrement(ordering: .relaxed) }
}
