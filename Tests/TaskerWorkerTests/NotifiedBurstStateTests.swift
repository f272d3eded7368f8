import Testing

@testable import TaskerWorker

/// The pending ids of a burst claim (`processing.claim_notified_bursts`, `NotifiedBurst`) without I/O.
/// (Bursts claimed by a worker on the real PostgreSQL: `NotifiedBurstTests` in TaskerSystemTests.)
@Suite("Notified bursts: pending ids", .timeLimit(.minutes(2)))
struct NotifiedBurstStateTests {
    /// The pending list without I/O: the first arrival leads, later ones join; an id already waiting
    /// is kept once (a duplicate or replayed notification costs nothing); past the bound nothing is
    /// kept (the queue is read instead); `take` hands out ids in arrival order, and 0 (shutdown,
    /// claiming off, shedding) ends the claimer and forgets what waits.
    @Test func pendingIdsAreDeduplicatedAndBounded() {
        var burst = NotifiedBurst()
        #expect(burst.add([1, 2], limit: 5) == .leads)
        #expect(burst.add([2, 3, 3], limit: 5) == .joined)
        #expect(burst.pending == [1, 2, 3])
        #expect(burst.add([4, 5, 6], limit: 5) == .overflow)
        #expect(burst.pending == [1, 2, 3])
        #expect(burst.take(2) == [1, 2])
        #expect(burst.add([1], limit: 5) == .joined)  // taken ids may be notified again: read by id, found hidden
        #expect(burst.pending == [3, 1])
        #expect(burst.take(0).isEmpty)
        #expect(burst.pending.isEmpty && !burst.claiming)
        #expect(burst.add([7], limit: 5) == .leads)
    }
}
