import Atomics
import Foundation
import Logging

/// Load shedding (`handler_dispatch.load_shedding`): stop claiming at `capacity_threshold_percent`
/// of the handler permits in use; warn at `warning_threshold_percent`.
public struct LoadShedding: Sendable {
    public let enabled: Bool
    public let capacityThresholdPercent: Double
    public let warningThresholdPercent: Double
    public let semaphore: AsyncSemaphore
    /// Claimed steps that do not hold a permit yet (in the dispatch channel or waiting for one).
    public let backlog: DispatchBacklog
    /// Told about every shed, so that a released permit triggers a re-read.
    public let capacity: CapacitySignal
    /// Claimed steps whose result is not stored yet (the completion processor counts them down).
    public let unstored: DispatchBacklog
    /// At most this many claimed steps without a stored result (nil: no such bound). Handlers give
    /// their permit back before their result is stored, so without it a fast handler and a slow
    /// database would pile finished steps up in memory (about 3 KB each).
    public let unstoredLimit: Int?
    private let logger: Logger
    private let warningThrottle = Throttle(interval: .seconds(10))

    public init(enabled: Bool, capacityThresholdPercent: Double, warningThresholdPercent: Double,
                semaphore: AsyncSemaphore, backlog: DispatchBacklog, capacity: CapacitySignal = CapacitySignal(),
                unstored: DispatchBacklog = DispatchBacklog(), unstoredLimit: Int? = nil,
                logger: Logger = Logger(label: "tasker.load_shedding")) {
        self.capacity = capacity
        self.unstored = unstored
        self.unstoredLimit = unstoredLimit
        self.enabled = enabled
        self.capacityThresholdPercent = capacityThresholdPercent
        self.warningThresholdPercent = warningThresholdPercent
        self.semaphore = semaphore
        self.backlog = backlog
        self.logger = logger
    }

    /// Claims that still fit below the capacity threshold (nil when shedding is disabled).
    func remainingCapacity(inFlightClaims: Int) -> Int? {
        guard enabled else { return nil }
        let allowed = Int((capacityThresholdPercent * Double(semaphore.limit) / 100).rounded(.up))
        let belowThreshold = allowed - semaphore.inUse - backlog.count - inFlightClaims
        guard let unstoredLimit else { return max(0, belowThreshold) }
        return max(0, min(belowThreshold, unstoredLimit - unstored.count - inFlightClaims))
    }

    /// Claimed work as a percentage of the handler permits: running handlers plus claimed steps
    /// still queued for a permit, so a burst of claims is shed before it overfills the dispatch buffer.
    public var usagePercent: Double {
        Double(semaphore.inUse + backlog.count) * 100 / Double(semaphore.limit)
    }

    /// At or above the capacity threshold (no warning logged).
    public var isShedding: Bool { enabled && usagePercent >= capacityThresholdPercent }

    /// `inFlightClaims`: claims under way, which will hold permits soon.
    func shouldShed(inFlightClaims: Int = 0) -> Bool {
        guard enabled else { return false }
        if remainingCapacity(inFlightClaims: inFlightClaims) == 0 {
            capacity.recordShed()
            return true
        }
        let usage = usagePercent + Double(inFlightClaims) * 100 / Double(semaphore.limit)
        if usage >= warningThresholdPercent, warningThrottle.allow() {
            logger.warning("handler capacity nearly exhausted", metadata: ["usage_percent": "\(Int(usage))"])
        }
        return false
    }
}

/// Counts claimed steps in one stage: waiting for a handler permit (`LoadShedding.backlog`, shared
/// by the executor and the dispatcher) or waiting for their result to be stored (`unstored`).
public final class DispatchBacklog: Sendable {
    private let value = ManagedAtomic<Int>(0)
    public init() {}
    public var count: Int { value.load(ordering: .relaxed) }
    func add() { value.wrappingIncrement(ordering: .relaxed) }
    func remove() { value.wrappingDecrement(ordering: .relaxed) }
}

/// Lets an action through at most once per `interval` (for warnings that would otherwise repeat
/// on every message under load).
final class Throttle: Sendable {
    private let intervalNanoseconds: Int64
    private let last = ManagedAtomic<Int64>(Int64.min / 2)

    init(interval: Duration) {
        intervalNanoseconds = interval.inNanoseconds
    }

    func allow() -> Bool {
        let now = Int64(DispatchTime.now().uptimeNanoseconds)
        let previous = last.load(ordering: .relaxed)
        guard now - previous >= intervalNanoseconds else { return false }
        return last.compareExchange(expected: previous, desired: now, ordering: .relaxed).exchanged
    }
}
