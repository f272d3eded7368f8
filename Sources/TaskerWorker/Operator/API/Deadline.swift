import Synchronization

/// Runs `operation` and returns its result, or `.timedOut` once `timeout` has passed — without
/// waiting for an operation that ignores cancellation (a probe must answer on time even when the
/// database hangs). On timeout the operation's task is cancelled and left to finish on its own.
func withDeadline<T: Sendable>(_ timeout: Duration, _ operation: @escaping @Sendable () async throws -> T)
    async -> DeadlineOutcome<T> {
    let race = DeadlineRace<T>()
    let work = Task<Void, Never> {
        do { race.finish(.value(try await operation())) } catch { race.finish(.failed(error)) }
    }
    let timer = Task<Void, Never> {
        try? await Task.sleep(for: timeout)
        if !Task.isCancelled { race.finish(.timedOut) }
    }
    let outcome = await withTaskCancellationHandler {
        await withCheckedContinuation { race.wait($0) }
    } onCancel: {
        race.finish(.timedOut)
    }
    timer.cancel()
    if case .timedOut = outcome { work.cancel() }
    return outcome
}

/// What `withDeadline` ends with.
enum DeadlineOutcome<T: Sendable>: Sendable {
    case value(T)
    case failed(any Error)
    case timedOut
}

/// The first outcome wins; the waiter is resumed exactly once, whether it starts waiting before
/// or after the outcome arrives.
private final class DeadlineRace<T: Sendable>: Sendable {
    private struct State {
        var outcome: DeadlineOutcome<T>?
        var continuation: CheckedContinuation<DeadlineOutcome<T>, Never>?
        var resumed = false
    }

    private let state = Mutex(State())

    func finish(_ outcome: DeadlineOutcome<T>) {
        let continuation: CheckedContinuation<DeadlineOutcome<T>, Never>? = state.withLock { state in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            return take(&state)
        }
        continuation?.resume(returning: outcome)
    }

    func wait(_ continuation: CheckedContinuation<DeadlineOutcome<T>, Never>) {
        let ready: (CheckedContinuation<DeadlineOutcome<T>, Never>, DeadlineOutcome<T>)? = state.withLock { state in
            state.continuation = continuation
            guard let outcome = state.outcome, let waiting = take(&state) else { return nil }
            return (waiting, outcome)
        }
        if let (waiting, outcome) = ready { waiting.resume(returning: outcome) }
    }

    private func take(_ state: inout State) -> CheckedContinuation<DeadlineOutcome<T>, Never>? {
        guard !state.resumed, let continuation = state.continuation else { return nil }
        state.resumed = true
        state.continuation = nil
        return continuation
    }
}
