/// Counting permits with FIFO waiters, as a pure value: no I/O, no awaits, no continuations.
/// Waiters are named by ids chosen by the caller, which keeps their continuations and resumes them
/// as the answers say. Used by `WorkerCapacityState` (handler permits) and `AsyncSemaphore`.
///
/// Invariants after every transition: `0 <= inUse <= limit`; `waiters` is empty unless every permit
/// is in use (a freed permit goes straight to the first waiter); a waiter is either queued or has
/// its permit, never both, and a cancelled waiter holds nothing.
struct PermitQueue: Sendable, Equatable {
    /// What `acquire` decided.
    enum Acquisition: Sendable, Equatable {
        /// The caller holds a permit now.
        case granted
        /// Every permit is taken: the caller waits, in order, until `release` hands one over.
        case queued
        /// The caller was cancelled before it waited: it holds nothing.
        case cancelled
    }

    /// The number of permits (at least 1).
    let limit: Int
    /// Permits held.
    private(set) var inUse = 0
    /// Callers waiting for a permit, first come first served.
    private(set) var waiters: [Int] = []

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Takes a permit for `waiter` if one is free, else queues it (nothing when `isCancelled`).
    mutating func acquire(waiter: Int, isCancelled: Bool = false) -> Acquisition {
        if isCancelled { return .cancelled }
        if inUse < limit, waiters.isEmpty {
            inUse += 1
            return .granted
        }
        waiters.append(waiter)
        return .queued
    }

    /// Takes a permit only if one is free.
    mutating func tryAcquire() -> Bool {
        guard inUse < limit, waiters.isEmpty else { return false }
        inUse += 1
        return true
    }

    /// Gives a permit back: handed to the first waiter (returned; it holds the permit now), or freed.
    /// A release without a permit held changes nothing (never below zero).
    mutating func release() -> Int? {
        guard waiters.isEmpty else { return waiters.removeFirst() }
        inUse = max(0, inUse - 1)
        return nil
    }

    /// Removes a cancelled waiter. True when it was still waiting (it holds nothing and must be told);
    /// false when it already got its permit (it holds it and gives it back by `release`).
    mutating func cancel(waiter: Int) -> Bool {
        guard let index = waiters.firstIndex(of: waiter) else { return false }
        waiters.remove(at: index)
        return true
    }
}
