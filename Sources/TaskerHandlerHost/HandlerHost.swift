import Foundation
import Logging
import Synchronization
import TaskerHandlerSDK

/// Runs a ``HandlerRegistry``'s Swift handlers on a worker built once: the embedded worker of
/// `libTaskerWorkerFFI.so` (the C ABI library `scripts/dev` builds in the worker's checkout, or an
/// installed copy), loaded when the host starts.
///
/// A handler package depends on this small module and the handler API only — no server, database or
/// gRPC code — so its first build compiles a few modules instead of the worker. The library runs the
/// whole worker in this process (intake, claim, completion, REST and gRPC as configured); steps whose
/// callable it has no Swift handler for (everything but the built-ins `tasker.noop|echo|fail|sleep`)
/// come through its FFI dispatch channel to this host, which runs the registered handler and hands
/// the result back. Claims, results, retries, checkpoints and the shutdown drain are the worker's, as
/// for a handler compiled into it. Timeouts: the host cancels a handler at its step's timeout (the
/// template's `timeout_seconds`, else 30 s) and answers a retryable `handler_timeout`; the worker's
/// own limit on a foreign step (`completion_timeout_ms` of its FFI dispatch settings) ends it
/// earlier when shorter. At most `maxRunningHandlers` handlers run at once, one past its timeout
/// included until it returns.
///
/// ```swift
/// let handlers = HandlerRegistry()
/// handlers.register("payments.charge_card", ChargeCard())
/// await HandlerHost.runExitingOnLaunchError(handlers: handlers)
/// ```
///
/// Limits: the library and this executable must come from the same Swift toolchain (they share its
/// runtime libraries in one process); one host per process (one embedded worker); the C calls are
/// made from the host's own threads, the handlers run as tasks on the cooperative pool, which the
/// library's own tasks share: a handler must not block its thread (as in any worker). The library is
/// looked for where ``Configuration/libraryPath`` says, and one writable by another user is refused.
public final class HandlerHost: Sendable {
    public let handlers: HandlerRegistry
    public let configuration: Configuration
    /// The stop of the current ``run()``, if one runs.
    private let currentStop = Mutex<StopSignal?>(nil)

    public init(handlers: HandlerRegistry, configuration: Configuration = Configuration()) {
        self.handlers = handlers
        self.configuration = configuration
    }

    /// Asks ``run()`` to stop (what SIGTERM and SIGINT do): intake stops, the steps in hand finish
    /// and are stored, then the worker stops.
    public func stop() { currentStop.withLock { $0 }?.trigger(.requested) }

    /// Loads the library, starts the embedded worker and serves its steps until ``stop()``,
    /// SIGTERM or SIGINT; returns once the worker has drained and stopped. Throws
    /// ``HandlerHostError/workerStopped`` when the worker stopped by itself.
    ///
    /// - Parameter onStart: called with the bootstrap result (`worker_id`, `namespaces`, the REST
    ///   and gRPC addresses …) once the worker serves.
    public func run(
        installSignalHandlers: Bool = true, onStart: (@Sendable (JSONValue) -> Void)? = nil
    ) async throws(HandlerHostError) {
        let stopSignal = StopSignal()
        let started = currentStop.withLock { current -> Bool in
            guard current == nil else { return false }
            current = stopSignal
            return true
        }
        guard started else { throw .alreadyRunning }
        defer { currentStop.withLock { $0 = nil } }
        if installSignalHandlers { stopSignal.installSignalHandlers() }
        defer { stopSignal.removeSignalHandlers() }
        let candidates = configuration.libraryCandidates()
        let loaded = await HostThreads.run("tasker-host-load") {
            Result { () throws(HandlerHostError) in try WorkerLibrary(candidates: candidates) }
        }
        let library = try loaded.get()
        let logger = {
            var logger = Logger(label: "tasker.handler-host") { _ in HostLogHandler(library: library) }
            logger.logLevel = .trace
            return logger
        }()
        let bootstrapJSON = (try? configuration.bootstrapDocument.jsonString()) ?? "{}"
        let booted = await HostThreads.run("tasker-host-bootstrap") {
            Result { () throws(WorkerLibrary.CallError) in try library.bootstrap(bootstrapJSON) }
        }
        let bootstrap: JSONValue
        switch booted {
        case .failure(let error): throw .bootstrapFailed(error.message)
        case .success(let text):
            bootstrap = text.flatMap { try? UntrustedJSON.decode(JSONValue.self, from: $0, what: "the bootstrap result") } ?? .null
        }
        let processor = StepEventProcessor(
            handlers: handlers, logger: logger, workerID: bootstrap["worker_id"]?.stringValue,
            hostname: ProcessInfo.processInfo.hostName)
        logger.info(
            "Swift handlers attached",
            metadata: ["library": "\(library.path)", "callables": "\(handlers.callables.joined(separator: ","))"])
        onStart?(bootstrap)
        let replies = SerialCallThread(name: "tasker-host-replies")
        let polling = Task {
            await HostThreads.run("tasker-host-poll") { [configuration] in
                Self.poll(library, processor: processor, replies: replies, logger: logger, configuration: configuration)
            }
            // The worker no longer runs: asked to stop, or by itself (then this is the stop's reason).
            stopSignal.trigger(.workerEnded)
        }
        await stopSignal.wait()
        if stopSignal.reason == .requested { logger.info("stopping: draining Swift handlers") }
        // The stop waits for the steps in hand, which the poll thread keeps serving until the
        // worker reports it no longer runs.
        let stopped = await HostThreads.run("tasker-host-stop") { Result { () throws(WorkerLibrary.CallError) in try library.stop() } }
        if case .failure(let error) = stopped, !error.isNotRunning {
            logger.error("the embedded worker's stop failed", metadata: ["error": "\(error.message)"])
        }
        await polling.value
        await replies.finish()
        if stopSignal.reason == .workerEnded {
            logger.error("the embedded worker stopped by itself; the handler host stops with it")
            throw .workerStopped
        }
    }

    /// The poll loop, on a thread of its own: each event's handler runs as a task and its reply goes
    /// through `replies`. At most `maxRunningHandlers` handlers run at once (a handler past its
    /// timeout keeps its place until it returns): with all places taken no step is polled, and the
    /// worker's own event timeout settles what waits. Ends when the worker no longer runs.
    private static func poll(
        _ library: WorkerLibrary, processor: StepEventProcessor, replies: SerialCallThread, logger: Logger,
        configuration: Configuration
    ) {
        let places = DispatchSemaphore(value: configuration.maxRunningHandlers)
        let timeout = configuration.pollMilliseconds
        var lastErrorLogged: ContinuousClock.Instant?
        while true {
            guard places.wait(timeout: .now() + .milliseconds(Int(timeout))) == .success else {
                if !library.isRunning() { return }
                continue
            }
            let event: String?
            do throws(WorkerLibrary.CallError) {
                event = try library.poll(timeoutMilliseconds: timeout)
            } catch {
                places.signal()
                if error.isNotRunning { return }
                // Logged at most every 10 s; retried after 100 ms.
                if lastErrorLogged.map({ $0.duration(to: .now) >= .seconds(10) }) ?? true {
                    logger.error("poll failed", metadata: ["error": "\(error.message)"])
                    lastErrorLogged = .now
                }
                Thread.sleep(forTimeInterval: 0.1)
                continue
            }
            guard let event else {
                places.signal()
                continue
            }
            Task {
                let reply = await processor.process(event)
                places.signal()
                replies.submit { send(reply, processor: processor, to: library, logger: logger) }
            }
        }
    }

    /// Hands a reply to the library (on the replies thread). A reply refused as malformed is
    /// replaced by a failure saying why (``StepEventProcessor/replacement(for:refusal:)``); a late
    /// one (the event timed out and got its `handler_timeout` result) is logged, not retried.
    private static func send(
        _ reply: StepEventProcessor.Reply, processor: StepEventProcessor, to library: WorkerLibrary, logger: Logger,
        replacing: Bool = true
    ) {
        do throws(WorkerLibrary.CallError) {
            switch reply {
            case .complete(let eventID, _, let json): try library.complete(eventID: eventID, resultJSON: json)
            case .checkpoint(let eventID, _, let json): try library.checkpoint(eventID: eventID, checkpointJSON: json)
            case .unanswerable(let reason):
                logger.error("step event not answerable; its timeout settles it", metadata: ["reason": "\(reason)"])
            }
        } catch {
            if replacing, error.isInvalidArgument, let replacement = processor.replacement(for: reply, refusal: error.message) {
                logger.warning("the worker refused a handler's reply; the step fails saying why", metadata: ["error": "\(error.message)"])
                send(replacement, processor: processor, to: library, logger: logger, replacing: false)
                return
            }
            logger.warning("the worker did not accept a handler's reply", metadata: ["error": "\(error.message)"])
        }
    }

    /// Runs `handlers` (``run()``); a host that cannot start prints why on standard error and the
    /// process exits with 78 (`EX_CONFIG`), as the `tasker-worker` daemon does for a launch error; one
    /// whose worker stopped by itself exits with 1.
    public static func runExitingOnLaunchError(
        handlers: HandlerRegistry, configuration: Configuration = Configuration()
    ) async {
        do {
            try await HandlerHost(handlers: handlers, configuration: configuration).run()
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            exit(error == .workerStopped ? 1 : 78)
        }
    }
}
