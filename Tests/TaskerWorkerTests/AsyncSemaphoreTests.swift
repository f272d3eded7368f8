import Testing

@testable import TaskerWorker

/// `AsyncSemaphore.acquire` honours cancellation: a cancelled waiter leaves the queue with
/// `CancellationError` and no permit is leaked (no I/O).
@Suite("AsyncSemaphore cancellation", .timeLimit(.minutes(1)))
struct AsyncSemaphoreTests {
    @Test func aCancelledWaiterLeavesTheQueueAndHoldsNothing() async throws {
        let semaphore = AsyncSemaphore(permits: 1)
        try await semaphore.acquire()
        let waiter = Task { try await semaphore.acquire() }
        while semaphore.waiting == 0 { await Task.yield() }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(semaphore.waiting == 0)
        #expect(semaphore.inUse == 1)
        // The release frees the permit (it is not handed to the cancelled waiter).
        semaphore.release()
        #expect(semaphore.inUse == 0)
        #expect(semaphore.tryAcquire())
    }

    @Test func aTaskCancelledBeforeItAsksGetsNoPermit() async throws {
        let semaphore = AsyncSemaphore(permits: 1)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await semaphore.acquire()
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(semaphore.inUse == 0)
        #expect(semaphore.waiting == 0)
    }

    /// Cancelling one of several waiters keeps the others' order: the next release goes to the
    /// first one still waiting.
    @Test func theOtherWaitersKeepTheirTurn() async throws {
        let semaphore = AsyncSemaphore(permits: 1)
        try await semaphore.acquire()
        let first = Task { try await semaphore.acquire() }
        while semaphore.waiting < 1 { await Task.yield() }
        let second = Task { try await semaphore.acquire() }
        while semaphore.waiting < 2 { await Task.yield() }
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        semaphore.release()
        try await second.value
        #expect(semaphore.inUse == 1)
        #expect(semaphore.waiting == 0)
        semaphore.release()
        #expect(semaphore.inUse == 0)
    }
}
