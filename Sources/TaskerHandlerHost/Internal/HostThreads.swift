import Foundation
import Synchronization

/// The host's own threads, for the library's blocking calls (``WorkerLibrary``): never a task of
/// Swift's cooperative pool, which the library's own tasks need while such a call waits.
enum HostThreads {
    /// Runs `body` on a new thread of its own; the awaiting task is suspended, not blocked.
    static func run<T: Sendable>(_ name: String, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: body()) }
            thread.name = name
            thread.start()
        }
    }
}

/// One thread that runs the calls handed to it, in order: the handlers' results and checkpoints go
/// to the library through it, so a handler's task never makes a blocking call itself.
final class SerialCallThread: Sendable {
    private let calls = Mutex<[(@Sendable () -> Void)?]>([])
    private let waiting = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)

    init(name: String) {
        let thread = Thread { [self] in runCalls() }
        thread.name = name
        thread.start()
    }

    private func runCalls() {
        while true {
            waiting.wait()
            // A nil call is the end: everything submitted before it has run.
            guard let call = calls.withLock({ $0.removeFirst() }) else { break }
            call()
        }
        ended.signal()
    }

    /// Runs `call` on the thread after the calls submitted before it.
    func submit(_ call: @escaping @Sendable () -> Void) {
        calls.withLock { $0.append(call) }
        waiting.signal()
    }

    /// Lets the calls already submitted run, then ends the thread; returns when it has ended.
    func finish() async {
        calls.withLock { $0.append(nil) }
        waiting.signal()
        await HostThreads.run("tasker-host-join") { [ended] in ended.wait() }
    }
}

/// Why the host stops: asked to (SIGTERM, SIGINT, ``HandlerHost/stop()``), or the embedded worker
/// ended by itself (a service of its group failed), whichever comes first.
final class StopSignal: Sendable {
    enum Reason: Int {
        case none = 0
        case requested = 1
        case workerEnded = 2
    }

    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    private let reasonValue = Atomic<Int>(Reason.none.rawValue)
    private let signals = Mutex<SignalSources?>(nil)

    /// Keeps the signal sources alive. `@unchecked Sendable`: the array is written once, before the
    /// box is shared, and only read again to cancel the sources once the host has stopped.
    private final class SignalSources: @unchecked Sendable {
        let sources: [(number: Int32, source: any DispatchSourceSignal)]
        init(_ sources: [(number: Int32, source: any DispatchSourceSignal)]) { self.sources = sources }
    }

    init() {
        (stream, continuation) = AsyncStream.makeStream()
    }

    /// The first reason given wins; later ones change nothing.
    func trigger(_ reason: Reason = .requested) {
        _ = reasonValue.compareExchange(expected: Reason.none.rawValue, desired: reason.rawValue, ordering: .acquiringAndReleasing)
        continuation.finish()
    }

    var reason: Reason { Reason(rawValue: reasonValue.load(ordering: .acquiring)) ?? .none }

    /// Returns once ``trigger(_:)`` was called (at once when it already was).
    func wait() async {
        for await _ in stream {}
    }

    /// SIGTERM and SIGINT trigger the stop; a second one ends the process at once (exit status
    /// 128 + the signal), as a second Ctrl-C does for the `tasker-worker` daemon.
    func installSignalHandlers() {
        let installed = [SIGTERM, SIGINT].map { number -> (number: Int32, source: any DispatchSourceSignal) in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                if reason != .none { _exit(128 + number) }
                trigger(.requested)
            }
            source.resume()
            return (number, source)
        }
        let box = SignalSources(installed)
        signals.withLock { $0 = box }
    }

    /// The signals' previous (default) actions back, once the host has stopped.
    func removeSignalHandlers() {
        guard
            let box = signals.withLock({ state -> SignalSources? in
                defer { state = nil }
                return state
            })
        else { return }
        for (number, source) in box.sources {
            source.cancel()
            signal(number, SIG_DFL)
        }
    }
}

/// Resumes a continuation once, whichever of several racers comes first.
final class ResumeOnce<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, Never>?>

    init(_ continuation: CheckedContinuation<T, Never>) {
        self.continuation = Mutex(continuation)
    }

    func resume(_ value: T) {
        let taken = continuation.withLock { state -> CheckedContinuation<T, Never>? in
            defer { state = nil }
            return state
        }
        taken?.resume(returning: value)
    }
}

/// A task handle handed out of the closure that creates it (the timer of a handler's race).
final class TaskSlot: Sendable {
    private let task = Mutex<Task<Void, Never>?>(nil)
    func set(_ value: Task<Void, Never>) { task.withLock { $0 = value } }
    func cancel() { task.withLock { $0 }?.cancel() }
}
