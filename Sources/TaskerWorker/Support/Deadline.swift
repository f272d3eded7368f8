import Synchronization

// The deadline races of the worker. `firstOutcome` is the one race whose caller must not wait for a
// contender that ignores cancellation (health probes, handler timeouts): its contenders run in tasks
// of their own and the losers are cancelled, never awaited. Two races stay structured task groups on
// purpose, because their body must be finished before they return: `RequestTimeoutMiddleware` (the
// route borrows Hummingbird's non-escaping responder) and `OneShotSignal.run(until:)` (a gRPC stream
// must not write after its handler returned). Timers that fire an action later (`DrainDeadline`, the
// pool's acquire timeout) are a sleeping task each, not races.

/// Runs `operation` and returns its result, or `.timedOut` once `timeout` has passed — without
/// waiting for an operation that ignores cancellation (a probe must answer on time even when the
/// database hangs). On timeout the operation's task is cancelled and left to finish on its own.
func withDeadline<T: Sendable>(
    _ timeout: Duration, _ operation: @escaping @Sendable () async throws -> T
)
    async -> DeadlineOutcome<T>
{
    await firstOutcome(
        onCancel: .timedOut,
        of: [
            { do { return .value(try await operation()) } catch { return .failed(error) } },
            {
                try? await Task.sleep(for: timeout)
                return Task.isCancelled ? nil : .timedOut
            },
        ])
}

/// What `withDeadline` ends with.
enum DeadlineOutcome<T: Sendable>: Sendable {
    case value(T)
    case failed(any Error)
    case timedOut
}

/// The one race of an operation against its deadline(s): runs each contender in a task of its own
/// and returns the first outcome one of them gives (a contender returning nil gives none), or
/// `onCancel` as soon as the calling task is cancelled. The other contenders' tasks are then
/// cancelled, never awaited: a contender that ignores cancellation cannot hold up the caller.
func firstOutcome<T: Sendable>(onCancel: T, of contenders: [@Sendable () async -> T?]) async -> T {
    let race = FirstOutcome<T>()
    let tasks = contenders.map { contender in
        Task<Void, Never> { if let outcome = await contender() { race.finish(outcome) } }
    }
    let outcome = await withTaskCancellationHandler {
        await withCheckedContinuation { race.wait($0) }
    } onCancel: {
        race.finish(onCancel)
    }
    for task in tasks { task.cancel() }
    return outcome
}

/// The first outcome wins; the waiter is resumed exactly once, whether it starts waiting before
/// or after the outcome arrives.
private final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var outcome: T?
        var continuation: CheckedContinuation<T, Never>?
        var resumed = false
    }

    private let state = Mutex(State())

    func finish(_ outcome: T) {
        let continuation: CheckedContinuation<T, Never>? = state.withLock { state in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            return take(&state)
        }
        continuation?.resume(returning: outcome)
    }

    func wait(_ continuation: CheckedContinuation<T, Never>) {
        let ready: (CheckedContinuation<T, Never>, T)? = state.withLock { state in
            state.continuation = continuation
            guard let outcome = state.outcome, let waiting = take(&state) else { return nil }
            return (waiting, outcome)
        }
        if let (waiting, outcome) = ready { waiting.resume(returning: outcome) }
    }

    private func take(_ state: inout State) -> CheckedContinuation<T, Never>? {
        guard !state.resumed, let continuation = state.continuation else { return nil }
        state.resumed = true
        state.continuation = nil
        return continuation
    }
}
