import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// The FFI dispatch channel's bookkeeping (`ForeignDispatchState`) without I/O or clock: the order
/// of events and pollers, the buffer bound, exactly-once outcomes, timeouts, starvation, drain.
@Suite("FFI dispatch channel state")
struct ForeignDispatchStateTests {
    typealias State = ForeignDispatchState<String>

    static let start = ContinuousClock.now

    static func at(ms: Int) -> ContinuousClock.Instant { start.advanced(by: .milliseconds(ms)) }

    static func gone(_ result: Result<State.Pending, State.GoneError>) -> State.Gone? {
        if case .failure(let error) = result { return error.reason }
        return nil
    }

    @discardableResult
    static func submit(_ state: inout State, _ id: UUID = UUID(), ms: Int = 0) -> (UUID, State.Submission) {
        (id, state.submit(id: id, stepUUID: UUID(), payload: "event \(id)", now: at(ms: ms)))
    }

    @Test func eventsArePolledInOrderAndEachGoesToOnePoller() {
        var state = State(bufferSize: 10)
        let ids = (0..<3).map { _ in Self.submit(&state).0 }
        #expect(state.queuedCount == 3)
        let polled = (0..<4).map { state.poll(poller: $0, wait: false)?.id }
        #expect(polled == ids + [nil])
        #expect(state.counters.polls == 4)
        #expect(state.waitingPollers == 0, "a poll without wait registers nothing")
        #expect(state.pending.values.allSatisfy { $0.stage == .polled })
    }

    @Test func aWaitingPollerGetsTheNextEventAtOnceInFIFOOrder() {
        var state = State(bufferSize: 10)
        #expect(state.poll(poller: 1, wait: true) == nil)
        #expect(state.poll(poller: 2, wait: true) == nil)
        #expect(state.waitingPollers == 2)
        let (_, first) = Self.submit(&state)
        let (_, second) = Self.submit(&state)
        #expect(first == .delivered(toPoller: 1))
        #expect(second == .delivered(toPoller: 2))
        #expect(state.queuedCount == 0)
        // A poller that gave up is not served.
        #expect(state.poll(poller: 3, wait: true) == nil)
        let cancelled = state.cancelPoller(3)
        let cancelledAgain = state.cancelPoller(3)
        #expect(cancelled && !cancelledAgain)
        let (_, third) = Self.submit(&state)
        #expect(third == .queued)
    }

    @Test func theBufferBoundsQueuedEventsAndBlockedOnesEnterInOrder() {
        var state = State(bufferSize: 2)
        let (a, _) = Self.submit(&state)
        let (b, _) = Self.submit(&state)
        let (c, blockedC) = Self.submit(&state)
        let (d, blockedD) = Self.submit(&state)
        #expect(blockedC == .blocked && blockedD == .blocked)
        #expect(state.queuedCount == 2 && state.blockedCount == 2)
        #expect(state.poll(poller: 0, wait: false)?.id == a)
        #expect(state.queuedCount == 2 && state.blockedCount == 1, "c entered the queue")
        // A queued event that times out makes room too.
        #expect(state.resolve(b, .timedOut)?.id == b)
        #expect(state.queuedCount == 2 && state.blockedCount == 0)
        #expect(state.poll(poller: 1, wait: false)?.id == c)
        #expect(state.poll(poller: 2, wait: false)?.id == d)
    }

    @Test func anOutcomeIsGivenOnceAndALateCompletionIsToldItTimedOut() {
        var state = State(bufferSize: 10)
        let (id, _) = Self.submit(&state)
        #expect(Self.gone(state.polledEvent(id)) == .notPolled)
        _ = state.poll(poller: 0, wait: false)
        #expect((try? state.polledEvent(id).get())?.id == id)
        #expect(state.resolve(id, .timedOut) != nil)
        #expect(state.resolve(id, .completed) == nil, "the completion lost the race: no second outcome")
        #expect(Self.gone(state.polledEvent(id)) == .timedOut)
        #expect(Self.gone(state.polledEvent(UUID())) == .unknown)
        #expect(state.counters.timeouts == 1 && state.counters.completions == 0)

        let (done, _) = Self.submit(&state)
        _ = state.poll(poller: 1, wait: false)
        #expect(state.resolve(done, .completed) != nil)
        #expect(Self.gone(state.polledEvent(done)) == .unknown)
        #expect(state.counters.completions == 1)
    }

    @Test func overdueEventsExpireQueuedOrPolled() {
        var state = State(bufferSize: 10)
        let (old, _) = Self.submit(&state, ms: 0)
        let (polledOld, _) = Self.submit(&state, ms: 10)
        _ = state.poll(poller: 0, wait: false)  // takes `old`
        let (young, _) = Self.submit(&state, ms: 900)
        let expired = state.expireOverdue(now: Self.at(ms: 1000), timeout: .milliseconds(500)).map(\.id)
        #expect(Set(expired) == [old, polledOld])
        #expect(state.pending.keys.sorted { $0.uuidString < $1.uuidString } == [young])
        #expect(state.counters.timeouts == 2)
    }

    @Test func starvationIsCountedOncePerEventWhenOnlyNewOnesAreReported() {
        var state = State(bufferSize: 10)
        let (a, _) = Self.submit(&state, ms: 0)
        Self.submit(&state, ms: 800)
        let first = state.starving(now: Self.at(ms: 1000), threshold: .milliseconds(500), onlyNew: true)
        #expect(first.map(\.id) == [a])
        #expect(state.starving(now: Self.at(ms: 1000), threshold: .milliseconds(500), onlyNew: true).isEmpty)
        #expect(state.starving(now: Self.at(ms: 1400), threshold: .milliseconds(500), onlyNew: false).count == 2)
        #expect(state.counters.starvationWarnings == 3)
        let metrics = state.metrics(now: Self.at(ms: 1400), starvationThreshold: .milliseconds(500))
        #expect(metrics.pendingCount == 2 && metrics.starvingEventCount == 2 && metrics.starvationDetected)
        #expect(metrics.oldestPendingAgeMs == 1400 && metrics.newestPendingAgeMs == 600)
        #expect(metrics.oldestEventID == a)
    }

    @Test func drainResolvesEverythingAndClosesTheChannel() {
        var state = State(bufferSize: 1)
        let (a, _) = Self.submit(&state)
        let (b, _) = Self.submit(&state)  // blocked
        _ = state.poll(poller: 0, wait: false)
        let (c, _) = Self.submit(&state)  // blocked
        let drained = Set(state.drainAll().map(\.id))
        #expect(drained == [a, b, c])
        #expect(state.pending.isEmpty && state.queuedCount == 0 && state.blockedCount == 0)
        #expect(Self.gone(state.polledEvent(a)) == .drained)
        #expect(Self.submit(&state).1 == .closed)
    }

    @Test func rememberedIDsAreBoundedAndPollersThatGiveUpDoNotPileUp() {
        var state = State(bufferSize: 10, rememberedLimit: 3)
        var ids: [UUID] = []
        for _ in 0..<5 {
            let (id, _) = Self.submit(&state)
            ids.append(id)
            _ = state.resolve(id, .timedOut)
        }
        #expect(Self.gone(state.polledEvent(ids[0])) == .unknown, "forgotten")
        #expect(Self.gone(state.polledEvent(ids[4])) == .timedOut)
        for poller in 0..<10_000 {
            #expect(state.poll(poller: poller, wait: true) == nil)
            let cancelled = state.cancelPoller(poller)
            #expect(cancelled)
        }
        #expect(state.waitingPollers == 0)
    }

    @Test func theLazyFIFOCompactsWhatWasPoppedOrRemoved() {
        var fifo = LazyFIFO<Int>()
        for value in 0..<1000 { fifo.append(value) }
        for value in stride(from: 1, to: 1000, by: 2) { _ = fifo.remove(value) }
        var popped: [Int] = []
        while let value = fifo.popFirst() { popped.append(value) }
        #expect(popped == Array(stride(from: 0, to: 1000, by: 2)))
        #expect(fifo.count == 0)
    }
}

/// `ForeignDispatchChannel` itself (continuations, timers), without a database: concurrent
/// pollers, waiting polls, and the release of waiting pollers when the worker stops.
@Suite("FFI dispatch channel", .timeLimit(.minutes(1)))
struct ForeignDispatchChannelTests {
    static func channel(timeoutMs: Int = 30_000) -> ForeignDispatchChannel {
        var configuration = WorkerConfiguration.FFIDispatch()
        configuration.completionTimeoutMs = timeoutMs
        return ForeignDispatchChannel(configuration: configuration)
    }

    static func event() -> ForeignStepEvent {
        let id = UUID()
        return ForeignStepEvent(id: id, stepUUID: UUID(), json: #"{"event_id":"\#(id)"}"#)
    }

    /// Eight pollers waiting at once, eight events: each event reaches exactly one poller, which
    /// completes it, and each dispatcher gets that completion.
    @Test func concurrentPollersEachGetExactlyOneEvent() async throws {
        let channel = Self.channel()
        let events = (0..<8).map { _ in Self.event() }
        async let polled: [UUID] = withTaskGroup(of: UUID?.self) { group in
            for _ in events {
                group.addTask {
                    guard let event = await channel.poll(timeout: .seconds(20)) else { return nil }
                    let now = Date()
                    let result = StepExecutionResult.success(
                        stepUUID: event.stepUUID, result: ["ok": true], startedAt: now, completedAt: now, workerID: nil,
                        hostname: nil)
                    try? channel.complete(eventID: event.id, result: result)
                    return event.id
                }
            }
            return await group.reduce(into: []) { if let id = $1 { $0.append(id) } }
        }
        try await waitUntil { channel.metrics.waitingPollers == 8 }
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for event in events {
                group.addTask {
                    if case .completed(let result) = await channel.submit(event) { return result.stepUUID == event.stepUUID }
                    return false
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes == Array(repeating: true, count: 8))
        #expect(Set(await polled) == Set(events.map(\.id)))
        #expect(channel.metrics.completions == 8 && channel.metrics.pendingCount == 0)
    }

    /// `pollBlocking` on its own OS thread (as a C caller does), off the cooperative pool.
    static func pollOnThread(_ channel: ForeignDispatchChannel, timeout: Duration) async -> ForeignStepEvent? {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: channel.pollBlocking(timeout: timeout)) }.start()
        }
    }

    /// Four foreign threads blocked in `pollBlocking`, four events: each thread wakes with exactly
    /// one; a blocking poll with nothing to take returns nil at its timeout or when released.
    @Test func threadsBlockedInPollEachGetExactlyOneEvent() async throws {
        let channel = Self.channel()
        let events = (0..<4).map { _ in Self.event() }
        async let polled: [UUID?] = withTaskGroup(of: UUID?.self) { group in
            for _ in events { group.addTask { await Self.pollOnThread(channel, timeout: .seconds(20))?.id } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        try await waitUntil { channel.metrics.waitingPollers == 4 }
        for event in events {
            Task { _ = await channel.submit(event) }
        }
        #expect(Set(await polled) == Set(events.map(\.id)))
        #expect(channel.metrics.pendingCount == 4 && channel.metrics.queuedCount == 0)
        // Each of the four was a wake-up of a waiting poller; a queued event taken at once is not.
        let wakeup = channel.metrics.wakeup
        #expect(wakeup.count == 4 && (wakeup.p50 ?? 0) > 0 && (wakeup.max ?? 0) >= (wakeup.p50 ?? 0))
        #expect(channel.metrics.handoff.count == 4 && (channel.metrics.handoff.p50 ?? 0) <= (wakeup.p50 ?? 0))
        Task { _ = await channel.submit(Self.event()) }
        try await waitUntil { channel.metrics.queuedCount == 1 }
        #expect(await Self.pollOnThread(channel, timeout: .seconds(5)) != nil)
        #expect(channel.metrics.wakeup.count == 4)
        #expect(await Self.pollOnThread(channel, timeout: .milliseconds(20)) == nil)
        async let released = Self.pollOnThread(channel, timeout: .seconds(600))
        try await waitUntil { channel.metrics.waitingPollers == 1 }
        channel.releasePollers()
        #expect(await released == nil)
        channel.abandonAll()
    }

    @Test func aWaitingPollReturnsEmptyAtItsTimeoutOrWhenTheWorkerStops() async throws {
        let channel = Self.channel()
        #expect(await channel.poll(timeout: .milliseconds(50)) == nil)
        #expect(await channel.poll(timeout: .zero) == nil)
        async let released = channel.poll(timeout: .seconds(600))
        try await waitUntil { channel.metrics.waitingPollers == 1 }
        channel.releasePollers()
        #expect(await released == nil)
        #expect(channel.metrics.waitingPollers == 0)
    }

    /// A completion timeout shorter than the starvation threshold (10 s by default) still runs
    /// its full length: an event completed at once is completed, not timed out.
    @Test func aTimeoutShorterThanTheStarvationThresholdRunsItsFullLength() async throws {
        let channel = Self.channel(timeoutMs: 5_000)
        let event = Self.event()
        async let outcome = channel.submit(event)
        let polled = try #require(await channel.poll(timeout: .seconds(10)))
        let now = Date()
        try channel.complete(
            eventID: polled.id,
            result: .success(stepUUID: event.stepUUID, result: [:], startedAt: now, completedAt: now, workerID: nil, hostname: nil))
        guard case .completed = await outcome else {
            Issue.record("not completed")
            return
        }
        #expect(channel.metrics.timeouts == 0)
    }

    @Test func anEventNotCompletedInTimeResolvesAsTimedOut() async throws {
        let channel = Self.channel(timeoutMs: 100)
        let event = Self.event()
        async let outcome = channel.submit(event)
        let polled = await channel.poll(timeout: .seconds(10))
        #expect(polled?.id == event.id)
        guard case .timedOut = await outcome else {
            Issue.record("not a timeout")
            return
        }
        #expect(channel.metrics.timeouts == 1 && channel.metrics.pendingCount == 0)
        #expect(channel.cleanupTimeouts() == 0)
    }
}

/// The bounded sample ring behind the wake-up latency figures.
@Suite struct LatencySamplesTests {
    @Test func keepsTheMostRecentSamplesAndSummarisesThemInMicroseconds() {
        let samples = LatencySamples(capacity: 4)
        #expect(samples.summary == LatencySamples.Summary(count: 0))
        for ms in [100, 100, 1, 2, 3, 4] { samples.record(.milliseconds(ms)) }
        let summary = samples.summary
        // 6 recorded, the ring holds the last 4 (1…4 ms): the two 100 ms samples are gone.
        #expect(summary.count == 6 && summary.max == 4_000 && summary.p50 == 2_500)
        #expect(summary.json == ["count": 6, "p50": 2500.0, "p99": 3970.0, "max": 4000.0])
    }
}

/// Only a worker with a foreign runtime attached reads the task and step rows its events carry: a
/// Swift-only worker's claims hydrate without them.
@Suite struct HydrateStatementChoiceTests {
    static func hydrateName(withRows: Bool) -> String? {
        let request = ClaimRequest(taskUUID: UUID(), stepUUID: UUID(), queue: "worker_x_queue", msgID: 1, withRows: withRows)
        guard case .prepared(let statement, _) = StepRepository.claimStatements([request], { _ in .plain("SELECT 1") })[0]
        else { return nil }
        return statement.name
    }

    @Test func theRowsAreReadOnlyForForeignStepEvents() {
        #expect(Self.hydrateName(withRows: false) == StepStatements.hydrate.name)
        #expect(Self.hydrateName(withRows: true) == StepStatements.hydrateWithRows.name)
        #expect(!StepStatements.hydrate.sql.contains("task_row"))
        #expect(StepStatements.hydrateWithRows.sql.contains("to_jsonb(t) - 'context' AS task_row"))
        #expect(StepStatements.hydrateWithRows.sql.contains("AS step_row"))
    }
}
