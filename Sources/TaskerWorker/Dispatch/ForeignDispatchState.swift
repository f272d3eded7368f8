import Foundation
import TaskerPostgres

/// The bookkeeping of the FFI dispatch channel (`ForeignDispatchChannel`), pure: no I/O, no clock
/// (`now` is passed in), no continuations (the channel keeps those and performs the answers).
///
/// Invariants:
/// - A pending event (dispatched, no outcome yet) is in exactly one stage: `blocked` (waiting for
///   room in the buffer), `queued` (waiting for a poller) or `polled` (a foreign handler has it).
/// - At most `bufferSize` events are queued; an event is blocked only while the queue is full, and
///   blocked events enter the queue in order as room frees.
/// - A poller waits only while the queue is empty; an event goes to exactly one poller (the
///   first waiting one).
/// - An event leaves `pending` exactly once, with one resolution (completed, checkpoint, timed
///   out, drained, cancelled); `resolve` returns it to exactly one caller. Timed-out and drained
///   ids are remembered (the newest `rememberedLimit`) so a late completion is told why.
/// - Once `closed` (the shutdown drain deadline), nothing new is accepted.
struct ForeignDispatchState<Payload> {
    enum Stage: Equatable { case blocked, queued, polled }

    struct Pending {
        let id: UUID
        let stepUUID: UUID
        let payload: Payload
        let dispatchedAt: ContinuousClock.Instant
        var stage: Stage
        var starvationReported = false
    }

    /// How an event left `pending`.
    enum Resolution: Equatable { case completed, checkpoint, timedOut, drained, cancelled }

    /// Why an id names no pending event.
    enum Gone: Equatable {
        /// It timed out (its step got a `handler_timeout` result) after `ageMs`.
        case timedOut
        /// The shutdown drain deadline passed before it was completed.
        case drained
        /// Never issued, already completed, or forgotten.
        case unknown
        /// Issued but not polled yet: nobody can hold its id.
        case notPolled
    }

    /// What `submit` did with a new event.
    enum Submission: Equatable {
        /// Handed at once to the waiting poller with this id.
        case delivered(toPoller: Int)
        case queued
        /// The buffer is full; it enters the queue when room frees.
        case blocked
        /// Refused: the channel is closed (the drain deadline passed).
        case closed
    }

    struct Counters: Equatable {
        var dispatched = 0
        var polls = 0
        var completions = 0
        var checkpoints = 0
        var timeouts = 0
        var starvationWarnings = 0
    }

    let bufferSize: Int
    let rememberedLimit: Int
    private(set) var pending: [UUID: Pending] = [:]
    private(set) var counters = Counters()
    private(set) var closed = false
    private var queue = LazyFIFO<UUID>()
    private var blocked = LazyFIFO<UUID>()
    private var pollers = LazyFIFO<Int>()
    private var gone: [UUID: Gone] = [:]
    private var goneOrder = LazyFIFO<UUID>()

    init(bufferSize: Int, rememberedLimit: Int = 10_000) {
        self.bufferSize = max(1, bufferSize)
        self.rememberedLimit = max(1, rememberedLimit)
    }

    var queuedCount: Int { queue.count }
    var blockedCount: Int { blocked.count }
    var waitingPollers: Int { pollers.count }

    // MARK: Dispatch side

    mutating func submit(id: UUID, stepUUID: UUID, payload: Payload, now: ContinuousClock.Instant) -> Submission {
        guard !closed else { return .closed }
        counters.dispatched += 1
        var entry = Pending(id: id, stepUUID: stepUUID, payload: payload, dispatchedAt: now, stage: .queued)
        if queue.count >= bufferSize {
            entry.stage = .blocked
            pending[id] = entry
            blocked.append(id)
            return .blocked
        }
        if let poller = pollers.popFirst() {
            entry.stage = .polled
            pending[id] = entry
            return .delivered(toPoller: poller)
        }
        pending[id] = entry
        queue.append(id)
        return .queued
    }

    // MARK: Poll side

    /// A poll: the oldest queued event (now `polled`), or nil; with `wait`, a nil answer registers
    /// `poller` as waiting (FIFO).
    mutating func poll(poller: Int, wait: Bool) -> Pending? {
        counters.polls += 1
        if let id = queue.popFirst() {
            pending[id]?.stage = .polled
            admitBlocked()
            return pending[id]
        }
        if wait { pollers.append(poller) }
        return nil
    }

    /// A waiting poller gives up (timeout or cancellation); false when it was already served.
    mutating func cancelPoller(_ poller: Int) -> Bool { pollers.remove(poller) }

    /// Every waiting poller, removed (the worker stopped: they return empty-handed).
    mutating func cancelAllPollers() -> [Int] {
        var cancelled: [Int] = []
        while let poller = pollers.popFirst() { cancelled.append(poller) }
        return cancelled
    }

    // MARK: Outcomes

    /// The pending event `id` a foreign handler may complete (polled), or why there is none.
    func polledEvent(_ id: UUID) -> Result<Pending, GoneError> {
        guard let entry = pending[id] else { return .failure(GoneError(reason: gone[id] ?? .unknown)) }
        guard entry.stage == .polled else { return .failure(GoneError(reason: .notPolled)) }
        return .success(entry)
    }

    /// Removes `id` from pending with `resolution`; nil when it had already left.
    mutating func resolve(_ id: UUID, _ resolution: Resolution) -> Pending? {
        guard let entry = pending.removeValue(forKey: id) else { return nil }
        switch entry.stage {
        case .queued:
            _ = queue.remove(id)
            admitBlocked()
        case .blocked: _ = blocked.remove(id)
        case .polled: break
        }
        switch resolution {
        case .completed: counters.completions += 1
        case .checkpoint: counters.checkpoints += 1
        case .timedOut:
            counters.timeouts += 1
            remember(id, .timedOut)
        case .drained: remember(id, .drained)
        case .cancelled: break
        }
        return entry
    }

    /// Every pending event dispatched at or before `now - timeout`, resolved as timed out.
    mutating func expireOverdue(now: ContinuousClock.Instant, timeout: Duration) -> [Pending] {
        let overdue = pending.values.filter { $0.dispatchedAt.advanced(by: timeout) <= now }.map(\.id)
        return overdue.compactMap { resolve($0, .timedOut) }
    }

    /// Closes the channel (the drain deadline passed) and resolves every pending event as drained.
    mutating func drainAll() -> [Pending] {
        closed = true
        return Array(pending.keys).compactMap { resolve($0, .drained) }
    }

    /// Pending events older than `threshold`; with `onlyNew`, those not reported before. Each
    /// returned event is marked reported and counted as a starvation warning.
    mutating func starving(now: ContinuousClock.Instant, threshold: Duration, onlyNew: Bool) -> [Pending] {
        let found = pending.values.filter {
            $0.dispatchedAt.advanced(by: threshold) <= now && !(onlyNew && $0.starvationReported)
        }.sorted { $0.dispatchedAt < $1.dispatchedAt }
        for entry in found { pending[entry.id]?.starvationReported = true }
        counters.starvationWarnings += found.count
        return found
    }

    /// The figures of `tasker_ffi_dispatch_metrics` at `now`.
    func metrics(now: ContinuousClock.Instant, starvationThreshold: Duration) -> ForeignDispatchMetrics {
        let oldest = pending.values.min { $0.dispatchedAt < $1.dispatchedAt }
        let newest = pending.values.max { $0.dispatchedAt < $1.dispatchedAt }
        let starving = pending.values.filter { $0.dispatchedAt.advanced(by: starvationThreshold) <= now }.count
        return ForeignDispatchMetrics(
            pendingCount: pending.count, queuedCount: queue.count, blockedCount: blocked.count,
            oldestPendingAgeMs: oldest.map { Int($0.dispatchedAt.duration(to: now).inMilliseconds) } ?? 0,
            newestPendingAgeMs: newest.map { Int($0.dispatchedAt.duration(to: now).inMilliseconds) } ?? 0,
            oldestEventID: oldest?.id, starvingEventCount: starving, polls: counters.polls,
            completions: counters.completions, checkpoints: counters.checkpoints, timeouts: counters.timeouts,
            starvationWarnings: counters.starvationWarnings, waitingPollers: pollers.count)
    }

    // MARK: Private

    private mutating func admitBlocked() {
        while queue.count < bufferSize, let id = blocked.popFirst() {
            pending[id]?.stage = .queued
            queue.append(id)
        }
    }

    private mutating func remember(_ id: UUID, _ reason: Gone) {
        gone[id] = reason
        goneOrder.append(id)
        while goneOrder.count > rememberedLimit, let oldest = goneOrder.popFirst() {
            gone.removeValue(forKey: oldest)
        }
    }

    struct GoneError: Error, Equatable {
        let reason: Gone
    }
}

/// A FIFO with removal of any element: removed elements are skipped when popped and compacted
/// away once they outnumber the live ones (a poller timing out over and over does not grow it).
struct LazyFIFO<Element: Hashable> {
    private var items: [Element] = []
    private var head = 0
    private var live: Set<Element> = []

    var count: Int { live.count }

    mutating func append(_ element: Element) {
        guard live.insert(element).inserted else { return }
        items.append(element)
    }

    mutating func popFirst() -> Element? {
        while head < items.count {
            let element = items[head]
            head += 1
            if live.remove(element) != nil {
                compactIfSparse()
                return element
            }
        }
        compactIfSparse()
        return nil
    }

    /// Removes `element`; false when it was not in the FIFO.
    mutating func remove(_ element: Element) -> Bool {
        guard live.remove(element) != nil else { return false }
        compactIfSparse()
        return true
    }

    private mutating func compactIfSparse() {
        let stored = items.count - head
        let prefixIsLarge = head > 64 && head * 2 > items.count
        let mostlyRemoved = stored > 64 && stored > 2 * live.count
        guard prefixIsLarge || mostlyRemoved else { return }
        items = items[head...].filter { live.contains($0) }
        head = 0
    }
}
