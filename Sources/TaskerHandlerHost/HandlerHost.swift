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
/// the result back. Claims, results, retries, checkpoints, timeouts and the shutdown drain are the
/// worker's, exactly as for a handler compiled into it.
///
/// ```swift
/// let handlers = HandlerRegistry()
/// handlers.register("payments.charge_card", ChargeCard())
/// await HandlerHost.runExitingOnLaunchError(handlers: handlers)
/// ```
///
/// Limits: the library and this executable must come from the same Swift toolchain (they share its
/// runtime libraries in one process); one host per process (one embedded worker); the C calls are
/// made from the host's own threads, the handlers run as tasks.
public final class HandlerHost: Sendable {
    public let handlers: HandlerRegistry
    public let configuration: Configuration
    private let stopSignal = StopSignal()
    private let running = Atomic<Bool>(false)

    public init(handlers: HandlerRegistry, configuration: Configuration = Configuration()) {
        self.handlers = handlers
        self.configuration = configuration
    }

    /// Asks ``run()`` to stop (what SIGTERM and SIGINT do): intake stops, the steps in hand finish
    /// and are stored, then the worker stops.
    public func stop() { stopSignal.trigger() }

    /// Loads the library, starts the embedded worker and serves its steps until ``stop()``,
    /// SIGTERM or SIGINT; returns once the worker has drained and stopped.
    ///
    /// - Parameter onStart: called with the bootstrap result (`worker_id`, `namespaces`, the REST
    ///   and gRPC addresses …) once the worker serves.
    public func run(
        installSignalHandlers: Bool = true, onStart: (@Sendable (JSONValue) -> Void)? = nil
    ) async throws(HandlerHostError) {
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            throw .alreadyRunning
        }
        defer { running.store(false, ordering: .releasing) }
        if installSignalHandlers { stopSignal.installSignalHandlers() }
        let candidates = configuration.libraryCandidates()
        let loaded = await HostThreads.run("tasker-host-load") {
            Result { () throws(HandlerHostError) in try WorkerLibrary(candidates: candidates) }
        }
        let library = try loaded.get()
        var logger = Logger(label: "tasker.handler-host") { _ in HostLogHandler(library: library) }
        logger.logLevel = .trace
        let bootstrapJSON = (try? configuration.bootstrapDocument.jsonString()) ?? "{}"
        let started = await HostThreads.run("tasker-host-bootstrap") {
            Result { () throws(WorkerLibrary.CallError) in try library.bootstrap(bootstrapJSON) }
        }
        let bootstrap: JSONValue
        switch started {
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
        let polling = await startPolling(library, processor: processor, replies: replies, logger: logger)
        await stopSignal.wait()
        logger.info("stopping: draining Swift handlers")
        // The stop waits for the steps in hand, which the poll thread keeps serving until the
        // worker reports it no longer runs.
        let stopped = await HostThreads.run("tasker-host-stop") { Result { () throws(WorkerLibrary.CallError) in try library.stop() } }
        if case .failure(let error) = stopped, !error.isNotRunning {
            logger.error("the embedded worker's stop failed", metadata: ["error": "\(error.message)"])
        }
        await polling.value
        await replies.finish()
    }

    /// The poll loop on a thread of its own: each event's handler runs as a task, its reply goes
    /// through `replies`. Ends when the worker no longer runs.
    private func startPolling(
        _ library: WorkerLibrary, processor: StepEventProcessor, replies: SerialCallThread, logger: Logger
    ) async -> Task<Void, Never> {
        let timeout = Int32(
            clamping: max(
                1,
                configuration.pollTimeout.components.seconds * 1000
                    + configuration.pollTimeout.components.attoseconds / 1_000_000_000_000_000))
        return Task {
            await HostThreads.run("tasker-host-poll") {
                while true {
                    let event: String?
                    do throws(WorkerLibrary.CallError) {
                        event = try library.poll(timeoutMilliseconds: timeout)
                    } catch {
                        if error.isNotRunning { return }
                        logger.error("poll failed", metadata: ["error": "\(error.message)"])
                        Thread.sleep(forTimeInterval: 0.1)
                        continue
                    }
                    guard let event else { continue }
                    Task {
                        let reply = await processor.process(event)
                        replies.submit { Self.send(reply, to: library, logger: logger) }
                    }
                }
            }
        }
    }

    /// Hands a reply to the library (on the replies thread). A late reply (the event timed out and
    /// got its `handler_timeout` result) is logged, not retried.
    private static func send(_ reply: StepEventProcessor.Reply, to library: WorkerLibrary, logger: Logger) {
        do throws(WorkerLibrary.CallError) {
            switch reply {
            case .complete(let eventID, let json): try library.complete(eventID: eventID, resultJSON: json)
            case .checkpoint(let eventID, let json): try library.checkpoint(eventID: eventID, checkpointJSON: json)
            case .unanswerable(let reason):
                logger.error("step event not answerable; its timeout settles it", metadata: ["reason": "\(reason)"])
            }
        } catch {
            logger.warning("the worker did not accept a handler's reply", metadata: ["error": "\(error.message)"])
        }
    }

    /// Runs `handlers` (``run()``); a host that cannot start prints why on standard error and the
    /// process exits with 78 (`EX_CONFIG`), as the `tasker-worker` daemon does for a launch error.
    public static func runExitingOnLaunchError(
        handlers: HandlerRegistry, configuration: Configuration = Configuration()
    ) async {
        do {
            try await HandlerHost(handlers: handlers, configuration: configuration).run()
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            exit(78)
        }
    }
}
