import Dispatch
import Foundation
import Logging
import Synchronization
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres

/// The FFI dispatch channel (`[worker.mpsc_channels.ffi_dispatch]`): claimed steps whose callable
/// has no Swift handler wait here for a foreign runtime (Python, Ruby, anything behind the C ABI)
/// to poll them, run its handler and complete them by event id.
///
/// The dispatch service calls `submit` for such a step while holding its handler permit, and gets
/// one `ForeignOutcome`: the foreign result, a checkpoint yield, a timeout (nothing within
/// `completion_timeout_ms`), the shutdown drain deadline, or cancellation. Pollers (`poll`) wait
/// for an event without sleeping: a submitted event goes straight to the first waiting poller.
/// The decisions are `ForeignDispatchState`'s (pure); this class holds it under one `Mutex` with
/// the continuations, and resumes them outside the lock.
package final class ForeignDispatchChannel: Sendable {
    typealias State = ForeignDispatchState<ForeignStepEvent>
    private typealias Dispatcher = CheckedContinuation<ForeignOutcome, Never>
    /// A waiting poller: a task (`poll`) or a foreign thread blocked in `pollBlocking`.
    private enum Poller {
        case task(CheckedContinuation<ForeignStepEvent?, Never>)
        case thread(ThreadPollSlot)

        func resume(with event: ForeignStepEvent?) {
            switch self {
            case .task(let continuation): continuation.resume(returning: event)
            case .thread(let slot): slot.fill(event)
            }
        }
    }

    private struct Locked {
        var state: State
        var dispatchers: [UUID: Dispatcher] = [:]
        var pollers: [Int: Poller] = [:]
        /// Answers for registered pollers whose continuation is not stored yet.
        var mail: [Int: Mail] = [:]
        var nextPoller = 0
    }

    private enum Mail {
        case event(ForeignStepEvent)
        case gaveUp

        var event: ForeignStepEvent? {
            if case .event(let event) = self { return event }
            return nil
        }
    }

    private let locked: Mutex<Locked>
    /// `completion_timeout_ms`.
    let completionTimeout: Duration
    /// `starvation_warning_threshold_ms`.
    let starvationThreshold: Duration
    /// `dispatch_buffer_size`.
    package let bufferSize: Int
    private let logger: Logger
    /// Claim → a WAITING poller has the event (events that were queued before a poll came are not
    /// wake-ups: their wait is for a free poller, counted by `queued_count` and the ages).
    private let wakeups = LatencySamples(capacity: 8192)
    /// The hand-over alone: the event given to a waiting poller → that poller's thread runs again.
    private let handoffs = LatencySamples(capacity: 8192)

    package init(configuration: WorkerConfiguration.FFIDispatch, logger: Logger = Logger(label: "tasker.ffi_dispatch")) {
        completionTimeout = .milliseconds(max(1, configuration.completionTimeoutMs))
        starvationThreshold = .milliseconds(max(1, configuration.starvationWarningThresholdMs))
        bufferSize = max(1, configuration.dispatchBufferSize)
        locked = Mutex(Locked(state: State(bufferSize: bufferSize)))
        self.logger = logger
    }

    // MARK: Dispatch side (HandlerDispatchService)

    /// Puts `event` into the channel and waits for its outcome. The completion timeout and the
    /// starvation warning run from now.
    package func submit(_ event: ForeignStepEvent) async -> ForeignOutcome {
        // One instant for the state's age and the timer's deadlines: a timer that measured from its
        // own start could wake a moment before the event's age reaches the threshold and miss it.
        let dispatchedAt = ContinuousClock.now
        let timer = Task { [self] in await watch(event, dispatchedAt: dispatchedAt) }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (dispatcher: Dispatcher) in
                let (submission, poller) = locked.withLock { locked -> (State.Submission?, Poller?) in
                    if Task.isCancelled { return (nil, nil) }
                    let submission = locked.state.submit(
                        id: event.id, stepUUID: event.stepUUID, payload: event, now: dispatchedAt)
                    if submission == .closed { return (submission, nil) }
                    locked.dispatchers[event.id] = dispatcher
                    guard case .delivered(let poller) = submission else { return (submission, nil) }
                    return (submission, Self.deliver(event, to: poller, in: &locked))
                }
                switch submission {
                case nil: dispatcher.resume(returning: .cancelled)
                case .closed?: dispatcher.resume(returning: .drainDeadline(polled: false))
                default: poller?.resume(with: event)
                }
            }
        } onCancel: {
            resolve(event.id, .cancelled, with: .cancelled)
        }
    }

    /// The timer of one event dispatched at `dispatchedAt`: a starvation warning once it is older
    /// than the threshold, then its timeout. Both wake at deadlines from that instant, so the
    /// warning's age check always holds when it runs.
    private func watch(_ event: ForeignStepEvent, dispatchedAt: ContinuousClock.Instant) async {
        if starvationThreshold < completionTimeout {
            do { try await Task.sleep(until: dispatchedAt + starvationThreshold, clock: .continuous) } catch { return }
            _ = reportStarvation(onlyNew: true)
        }
        do { try await Task.sleep(until: dispatchedAt + completionTimeout, clock: .continuous) } catch { return }
        if resolve(event.id, .timedOut, with: .timedOut) {
            logger.warning(
                "foreign handler did not complete the step in time",
                metadata: [
                    "event_id": "\(event.id.uuidString.lowercased())", "step_uuid": "\(event.stepUUID.uuidString.lowercased())",
                    "completion_timeout_ms": "\(completionTimeout.inMilliseconds)",
                ])
        }
    }

    /// Removes `id` and resumes its dispatcher with `outcome`; false when it had already left.
    @discardableResult
    private func resolve(_ id: UUID, _ resolution: State.Resolution, with outcome: ForeignOutcome) -> Bool {
        let dispatcher = locked.withLock { locked -> Dispatcher? in
            guard locked.state.resolve(id, resolution) != nil else { return nil }
            return locked.dispatchers.removeValue(forKey: id)
        }
        dispatcher?.resume(returning: outcome)
        return dispatcher != nil
    }

    /// The shutdown drain deadline passed: every pending event's step gets its drain result, and
    /// the channel accepts nothing more.
    func abandonAll() {
        let resumed = locked.withLock { locked -> [(Dispatcher, Bool)] in
            locked.state.drainAll().compactMap { entry in
                locked.dispatchers.removeValue(forKey: entry.id).map { ($0, entry.stage == .polled) }
            }
        }
        for (dispatcher, polled) in resumed { dispatcher.resume(returning: .drainDeadline(polled: polled)) }
    }

    // MARK: Poll side (the foreign runtime)

    /// The next step event if one is queued, without waiting (no task, no suspension: what a
    /// zero-timeout poll from a foreign thread runs).
    func tryPoll() -> ForeignStepEvent? {
        locked.withLock { locked in
            let id = locked.nextPoller
            locked.nextPoller += 1
            return locked.state.poll(poller: id, wait: false)?.payload
        }
    }

    /// The next step event, waiting up to `timeout` (zero: answer at once); nil when none came.
    /// Several callers may poll at once; each event goes to exactly one of them.
    package func poll(timeout: Duration) async -> ForeignStepEvent? {
        guard timeout > .zero else { return tryPoll() }
        let (id, immediate) = locked.withLock { locked -> (Int, ForeignStepEvent?) in
            let id = locked.nextPoller
            locked.nextPoller += 1
            return (id, locked.state.poll(poller: id, wait: true)?.payload)
        }
        if let immediate { return immediate }
        // Registered as waiting: an event or the timeout may come before the continuation is
        // stored; they leave their answer in `mail`.
        let timer = Task { [self] in
            do { try await Task.sleep(for: timeout) } catch { return }
            cancelPoller(id)
        }
        defer { timer.cancel() }
        let event = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<ForeignStepEvent?, Never>) in
                let mail = locked.withLock { locked -> Mail? in
                    if let mail = locked.mail.removeValue(forKey: id) { return mail }
                    locked.pollers[id] = .task(continuation)
                    return nil
                }
                if let mail { continuation.resume(returning: mail.event) }
            }
        } onCancel: {
            cancelPoller(id)
        }
        return woken(event)
    }

    /// `poll` for a foreign thread, blocking only that thread: it waits on a semaphore the
    /// submitting task signals directly (no task, no hop through the cooperative pool). Never call
    /// it from a task of the pool.
    package func pollBlocking(timeout: Duration) -> ForeignStepEvent? {
        guard timeout > .zero else { return tryPoll() }
        let slot = ThreadPollSlot()
        let (id, immediate) = locked.withLock { locked -> (Int, ForeignStepEvent?) in
            let id = locked.nextPoller
            locked.nextPoller += 1
            if let entry = locked.state.poll(poller: id, wait: true) { return (id, entry.payload) }
            locked.pollers[id] = .thread(slot)
            return (id, nil)
        }
        if let immediate { return immediate }
        let nanoseconds = Int(clamping: max(0, timeout.inNanoseconds))
        if slot.wait(until: .now() + .nanoseconds(nanoseconds)) { return woken(slot.take(), handedAt: slot.filledAt) }
        let gaveUp = locked.withLock { locked -> Bool in
            guard locked.state.cancelPoller(id) else { return false }
            _ = locked.pollers.removeValue(forKey: id)
            return true
        }
        if gaveUp { return nil }
        // Served while timing out: the event is being handed over.
        _ = slot.wait(until: .distantFuture)
        return woken(slot.take(), handedAt: slot.filledAt)
    }

    /// Records the wake-up latency of an event handed to a waiting poller.
    private func woken(_ event: ForeignStepEvent?, handedAt: ContinuousClock.Instant? = nil) -> ForeignStepEvent? {
        guard let event else { return nil }
        let now = ContinuousClock.now
        wakeups.record(now - event.readyAt)
        if let handedAt { handoffs.record(now - handedAt) }
        return event
    }

    /// A waiting poller gives up (its timeout, or its task was cancelled).
    private func cancelPoller(_ id: Int) {
        let poller = locked.withLock { locked -> Poller? in
            guard locked.state.cancelPoller(id) else { return nil }
            guard let poller = locked.pollers.removeValue(forKey: id) else {
                locked.mail[id] = .gaveUp
                return nil
            }
            return poller
        }
        poller?.resume(with: nil)
    }

    /// The worker stopped: every waiting poller returns nil now instead of at its timeout.
    package func releasePollers() {
        let waiting = locked.withLock { locked -> [Poller] in
            locked.state.cancelAllPollers().compactMap { id in
                guard let poller = locked.pollers.removeValue(forKey: id) else {
                    locked.mail[id] = .gaveUp
                    return nil
                }
                return poller
            }
        }
        for poller in waiting { poller.resume(with: nil) }
    }

    /// The continuation of the waiting poller `id`, or nil after leaving `event` in its mail.
    private static func deliver(_ event: ForeignStepEvent, to id: Int, in locked: inout Locked) -> Poller? {
        guard let poller = locked.pollers.removeValue(forKey: id) else {
            locked.mail[id] = .event(event)
            return nil
        }
        return poller
    }

    /// Completes a polled event with a foreign handler's result (`result.step_uuid` must be the
    /// event's step). The event stays pending when the result is refused.
    package func complete(eventID: UUID, result: StepExecutionResult) throws(ForeignDispatchError) {
        try take(eventID, expecting: result.stepUUID, field: "result.step_uuid", as: .completed, with: .completed(result))
    }

    /// A polled event's handler yields a checkpoint: the dispatch service persists it and
    /// dispatches the step again as a new event carrying it.
    package func checkpointYield(eventID: UUID, stepUUID: UUID, yield: CheckpointYield) throws(ForeignDispatchError) {
        try take(eventID, expecting: stepUUID, field: "checkpoint.step_uuid", as: .checkpoint, with: .checkpoint(yield))
    }

    private func take(
        _ id: UUID, expecting stepUUID: UUID, field: String, as resolution: State.Resolution, with outcome: ForeignOutcome
    ) throws(ForeignDispatchError) {
        let taken = locked.withLock { locked -> Result<Dispatcher?, ForeignDispatchError> in
            switch locked.state.polledEvent(id) {
            case .failure(let gone):
                return .failure(ForeignDispatchError.gone(id, gone.reason, timeout: completionTimeout))
            case .success(let entry):
                guard entry.stepUUID == stepUUID else {
                    return .failure(
                        .invalidArgument(
                            "\(field) \(stepUUID.uuidString.lowercased()) is not the step of event \(id.uuidString.lowercased()) (\(entry.stepUUID.uuidString.lowercased()))"
                        ))
                }
                _ = locked.state.resolve(id, resolution)
                return .success(locked.dispatchers.removeValue(forKey: id))
            }
        }
        try taken.get()?.resume(returning: outcome)
    }

    // MARK: Maintenance and figures

    /// Logs a warning for each pending event older than the starvation threshold (with `onlyNew`,
    /// only those not reported before) and returns their count.
    @discardableResult
    package func reportStarvation(onlyNew: Bool = false) -> Int {
        let now = ContinuousClock.now
        let starving = locked.withLock { $0.state.starving(now: now, threshold: starvationThreshold, onlyNew: onlyNew) }
        for entry in starving {
            logger.warning(
                "FFI step event pending past the starvation threshold (no foreign handler completed it)",
                metadata: [
                    "event_id": "\(entry.id.uuidString.lowercased())", "step_uuid": "\(entry.stepUUID.uuidString.lowercased())",
                    "age_ms": "\(entry.dispatchedAt.duration(to: now).inMilliseconds)", "polled": "\(entry.stage == .polled)",
                    "starvation_warning_threshold_ms": "\(starvationThreshold.inMilliseconds)",
                ])
        }
        return starving.count
    }

    /// Gives every event pending past the completion timeout its timeout outcome now (the
    /// per-event timers also do); returns their count.
    @discardableResult
    package func cleanupTimeouts() -> Int {
        let now = ContinuousClock.now
        let expired = locked.withLock { locked -> [Dispatcher] in
            locked.state.expireOverdue(now: now, timeout: completionTimeout).compactMap {
                locked.dispatchers.removeValue(forKey: $0.id)
            }
        }
        for dispatcher in expired { dispatcher.resume(returning: .timedOut) }
        if !expired.isEmpty {
            logger.warning(
                "FFI step events timed out",
                metadata: ["count": "\(expired.count)", "completion_timeout_ms": "\(completionTimeout.inMilliseconds)"])
        }
        return expired.count
    }

    package var metrics: ForeignDispatchMetrics {
        let now = ContinuousClock.now
        var metrics = locked.withLock { $0.state.metrics(now: now, starvationThreshold: starvationThreshold) }
        metrics.wakeup = wakeups.summary
        metrics.handoff = handoffs.summary
        return metrics
    }
}

/// One step event for a foreign handler: its id, its step, and the event JSON it is polled as.
package struct ForeignStepEvent: Sendable, Equatable {
    package let id: UUID
    package let stepUUID: UUID
    package let json: String
    /// When the step became ready for a poller (its claim; after a checkpoint yield, the re-dispatch):
    /// the start of the poll wake-up latency.
    let readyAt: ContinuousClock.Instant

    package init(id: UUID, stepUUID: UUID, json: String, readyAt: ContinuousClock.Instant = .now) {
        self.id = id
        self.stepUUID = stepUUID
        self.json = json
        self.readyAt = readyAt
    }
}

/// How a submitted event ended.
package enum ForeignOutcome: Sendable {
    case completed(StepExecutionResult)
    case checkpoint(CheckpointYield)
    case timedOut
    /// The shutdown drain deadline passed; `polled`: a foreign handler had taken the event.
    case drainDeadline(polled: Bool)
    /// The dispatching task was cancelled (a forced stop).
    case cancelled
}

/// Where an event is handed to a foreign thread blocked in `pollBlocking`.
private final class ThreadPollSlot: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let event = Mutex<(ForeignStepEvent?, ContinuousClock.Instant?)>((nil, nil))

    func fill(_ value: ForeignStepEvent?) {
        event.withLock { $0 = (value, .now) }
        semaphore.signal()
    }

    /// When `fill` handed the answer over.
    var filledAt: ContinuousClock.Instant? { event.withLock { $0.1 } }

    /// False at the deadline.
    func wait(until deadline: DispatchTime) -> Bool { semaphore.wait(timeout: deadline) == .success }

    func take() -> ForeignStepEvent? { event.withLock { $0.0 } }
}
