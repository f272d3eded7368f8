import Atomics

/// Tells the event system that a handler permit came free after load shedding refused work, so
/// that the refused messages are read again at once instead of at the next catch-up or poll tick
/// (with few permits, waiting for those made throughput collapse: see docs/benchmarks.md).
public final class CapacitySignal: Sendable {
    private let shedSinceRelease = ManagedAtomic<Bool>(false)
    private let continuation: AsyncStream<Void>.Continuation
    /// Yields when a permit is released after a shed (coalesced: at most one pending element).
    public let freed: AsyncStream<Void>

    public init() {
        (freed, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Load shedding refused a delivery.
    public func recordShed() { shedSinceRelease.store(true, ordering: .sequentiallyConsistent) }

    /// A handler permit was released.
    public func permitReleased() {
        // Sequentially consistent on both sides: a shed recorded while a permit is being released is
        // either seen here or sees the released permit (`StepExecutorActor.admitsNotification`).
        if shedSinceRelease.exchange(false, ordering: .sequentiallyConsistent) { continuation.yield() }
    }

    /// Ends `freed` (shutdown).
    public func finish() { continuation.finish() }
}
