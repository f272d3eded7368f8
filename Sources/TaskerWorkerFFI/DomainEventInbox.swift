import Synchronization
import TaskerHandlerSDK
import TaskerModel
import TaskerWorker

/// The in-process (`fast`/`broadcast`) domain events for `tasker_poll_in_process_event`: a pump
/// task reads the worker's subscription into a bounded buffer (the oldest dropped when full, as
/// the subscription itself does); pollers take events in order, waiting up to their timeout.
final class DomainEventInbox: Sendable {
    private struct State {
        var buffer: [String] = []
        var head = 0
        var waiters: [Int: CheckedContinuation<String?, Never>] = [:]
        var order: [Int] = []
        var nextWaiter = 0
        /// Pollers about to store their continuation, and the answer left for them meanwhile.
        var registering: Set<Int> = []
        var mail: [Int: String?] = [:]
    }

    private let state = Mutex(State())
    private let limit: Int
    private let pump: Mutex<Task<Void, Never>?> = Mutex(nil)

    init(events: AsyncStream<DomainEvent>, limit: Int = 1000) {
        self.limit = max(1, limit)
        let task = Task { [weak self] in
            for await event in events {
                guard let self, let text = try? event.json.jsonString() else { continue }
                self.deliver(text)
            }
        }
        pump.withLock { $0 = task }
    }

    /// Stops reading the subscription (the worker stopped).
    func close() { pump.withLock { $0?.cancel() } }

    private func deliver(_ text: String) {
        let waiter = state.withLock { state -> CheckedContinuation<String?, Never>? in
            while let id = state.order.first {
                state.order.removeFirst()
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
            }
            state.buffer.append(text)
            if state.buffer.count - state.head > limit { state.head += 1 }
            if state.head > 256 {
                state.buffer.removeFirst(state.head)
                state.head = 0
            }
            return nil
        }
        waiter?.resume(returning: text)
    }

    /// The next event's JSON, waiting up to `timeout`; nil when none came.
    func poll(timeout: Duration) async -> String? {
        let (id, immediate) = state.withLock { state -> (Int, String??) in
            let id = state.nextWaiter
            state.nextWaiter += 1
            if state.head < state.buffer.count {
                defer { state.head += 1 }
                return (id, .some(state.buffer[state.head]))
            }
            guard timeout > .zero else { return (id, .some(nil)) }
            state.registering.insert(id)
            return (id, nil)
        }
        if let immediate { return immediate }
        let timer = Task { [self] in
            do { try await Task.sleep(for: timeout) } catch { return }
            giveUp(id)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            let ready = state.withLock { state -> String?? in
                state.registering.remove(id)
                if let mail = state.mail.removeValue(forKey: id) { return .some(mail) }
                if state.head < state.buffer.count {
                    defer { state.head += 1 }
                    return .some(state.buffer[state.head])
                }
                state.waiters[id] = continuation
                state.order.append(id)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    private func giveUp(_ id: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<String?, Never>? in
            guard let waiter = state.waiters.removeValue(forKey: id) else {
                if state.registering.contains(id) { state.mail[id] = .some(nil) }
                return nil
            }
            state.order.removeAll { $0 == id }
            return waiter
        }
        waiter?.resume(returning: nil)
    }
}
