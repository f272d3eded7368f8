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

/// The host's stop: SIGTERM, SIGINT or ``HandlerHost/stop()``, whichever comes first.
final class StopSignal: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    private let sources = Mutex<SignalSources?>(nil)

    /// Keeps the signal sources alive. `@unchecked Sendable`: the array is written once, before the
    /// box is shared, and never read again (the sources only have to stay retained).
    private final class SignalSources: @unchecked Sendable {
        let sources: [any DispatchSourceSignal]
        init(_ sources: [any DispatchSourceSignal]) { self.sources = sources }
    }

    init() {
        (stream, continuation) = AsyncStream.makeStream()
    }

    func trigger() { continuation.finish() }

    /// Returns once ``trigger()`` was called (at once when it already was).
    func wait() async {
        for await _ in stream {}
    }

    /// SIGTERM and SIGINT trigger the stop (their default action, ending the process at once, is replaced).
    func installSignalHandlers() {
        let installed = [SIGTERM, SIGINT].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in trigger() }
            source.resume()
            return source
        }
        let box = SignalSources(installed)
        sources.withLock { $0 = box }
    }
}
