import Logging
import ServiceLifecycle
import Synchronization

/// The state of a listener's connection, for health checks.
public enum ListenerConnectionState: Sendable, Equatable {
    /// Not started yet.
    case idle
    case connecting
    /// Connected and LISTENing; `backendPID` is the session's server process.
    case connected(backendPID: Int32)
    /// The connection was lost (or could not be opened); the next attempt follows after a backoff.
    case reconnecting(attempt: Int, lastError: String)
    case stopped

    public var isConnected: Bool {
        if case .connected = self { return true }
        return false
    }
}

/// What a listener delivers.
public enum ListenerEvent: Sendable, Equatable {
    /// The listener (re)connected and is LISTENing on every channel. Notifications sent while it was
    /// disconnected are lost, so consumers should read their queues when `isReconnect` is true.
    case connected(isReconnect: Bool)
    case notification(PostgresNotification)
}

/// A LISTEN/NOTIFY subscriber that survives connection loss.
///
/// `run()` (it is a `Service`) connects, LISTENs on every channel and waits on the socket for
/// notifications. When the connection breaks, it reconnects with capped exponential backoff and
/// LISTENs again; `state` tells health checks where it stands. Channels may be added at any time.
/// While idle it checks the connection every `keepaliveInterval` with `SELECT 1`.
public final class PostgresListener: Service, Sendable {
    private struct Shared {
        var state: ListenerConnectionState = .idle
        var channels: [String] = []
        var connection: PostgresConnection?
        var stopping = false
    }

    public let url: String
    public let backoff: ReconnectBackoff
    public let keepaliveInterval: Duration
    public let connectTimeout: Duration
    /// `statement_timeout` / `lock_timeout` of the listening session.
    public let sessionLimits: PostgresSessionLimits
    private let logger: Logger
    private let shared = Mutex(Shared())
    private let stream: AsyncStream<ListenerEvent>
    private let continuation: AsyncStream<ListenerEvent>.Continuation
    /// Events dropped so far. A lock, not an atomic: `publish` holds it across the yield that drops
    /// and the count, so a consumer reading `droppedEvents` after taking the event that displaced a
    /// dropped one always sees that drop counted (with an atomic it could take the event first and
    /// read the count before the increment, and the drop would go unanswered until another event).
    private let dropped = Mutex<Int>(0)

    public init(
        url: String, channels: [String] = [], backoff: ReconnectBackoff = ReconnectBackoff(),
        keepaliveInterval: Duration = .seconds(30), connectTimeout: Duration = .seconds(10),
        sessionLimits: PostgresSessionLimits = .serverDefaults,
        bufferSize: Int = 10_000, logger: Logger = Logger(label: "tasker.postgres.listener")
    ) {
        self.sessionLimits = sessionLimits
        self.url = url
        self.backoff = backoff
        self.keepaliveInterval = keepaliveInterval
        self.connectTimeout = connectTimeout
        self.logger = logger
        // Notifications are wake-up hints: if a consumer falls more than `bufferSize` behind, the
        // oldest are dropped and counted (`droppedEvents`); the consumer must then read its queues.
        (stream, continuation) = AsyncStream.makeStream(
            of: ListenerEvent.self,
            bufferingPolicy: .bufferingNewest(bufferSize))
        shared.withLock { $0.channels = Self.unique(channels) }
    }

    /// Connection events and notifications, in arrival order. Meant for one consumer; it ends when
    /// `run()` returns.
    public var events: AsyncStream<ListenerEvent> { stream }

    public var state: ListenerConnectionState { shared.withLock { $0.state } }

    /// Events dropped so far because the consumer was more than `bufferSize` behind (the oldest
    /// buffered event goes). The messages they announced are only found by reading the queues.
    /// Read after taking an event, it counts every drop that event's arrival caused.
    public var droppedEvents: Int { dropped.withLock { $0 } }

    public var channels: [String] { shared.withLock { $0.channels } }

    /// Adds channels; a connected listener LISTENs on them right away.
    public func listen(_ newChannels: [String]) {
        let connection = shared.withLock { shared -> PostgresConnection? in
            shared.channels = Self.unique(shared.channels + newChannels)
            return shared.connection
        }
        connection?.interrupt()
    }

    /// Runs until cancelled or, inside a `ServiceGroup`, until graceful shutdown (which also cuts
    /// short a reconnect backoff in progress).
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskCancellationHandler {
                await self.runLoop()
            } onCancel: {
                self.stop()
            }
        }
    }

    /// Stops `run()`; safe from any thread.
    public func stop() {
        let connection = shared.withLock { shared -> PostgresConnection? in
            shared.stopping = true
            return shared.connection
        }
        connection?.interrupt()
        connection?.cancelStatement()
    }

    private var isStopping: Bool { shared.withLock { $0.stopping } || Task.isCancelled }

    private func runLoop() async {
        var attempts = RetryAttempts(backoff: backoff)
        var everConnected = false
        while !isStopping {
            setState(.connecting)
            do {
                let connection = try await PostgresConnection.connect(
                    url: url, applicationName: "tasker-worker-listener", connectTimeout: connectTimeout,
                    limits: sessionLimits, logger: logger)
                shared.withLock { $0.connection = connection }
                defer { shared.withLock { $0.connection = nil } }
                // Cancellation (stop, graceful shutdown) also ends a statement in progress (LISTEN,
                // the keepalive), however long the server or the network takes to answer.
                try await connection.cancellable {
                    var listening: Set<String> = []
                    try await subscribe(connection, listening: &listening)
                    let pid = await connection.backendPID
                    setState(.connected(backendPID: pid))
                    if everConnected {
                        logger.info("database listener reconnected", metadata: ["backend_pid": "\(pid)", "channels": "\(listening.count)"])
                    }
                    publish(.connected(isReconnect: everConnected))
                    everConnected = true
                    attempts.succeeded()
                    try await receive(on: connection, listening: &listening)
                }
                await connection.close()
            } catch {
                guard !isStopping else { break }
                let delay = attempts.failed()
                setState(.reconnecting(attempt: attempts.failures, lastError: "\(error)"))
                logger.warning(
                    "database listener lost its connection; reconnecting",
                    metadata: ["error": "\(error)", "attempt": "\(attempts.failures)", "retry_in": "\(delay)"])
                try? await Task.sleep(for: delay)
            }
        }
        setState(.stopped)
        continuation.finish()
    }

    private func receive(on connection: PostgresConnection, listening: inout Set<String>) async throws {
        while !isStopping {
            try await subscribe(connection, listening: &listening)
            let notes = try await connection.waitForNotifications(timeout: keepaliveInterval)
            if notes.isEmpty {
                // Timed out or interrupted: prove the connection still works.
                if !isStopping { try await connection.query("SELECT 1") }
                continue
            }
            for note in notes { publish(.notification(note)) }
        }
    }

    private func subscribe(_ connection: PostgresConnection, listening: inout Set<String>) async throws {
        for channel in channels where !listening.contains(channel) {
            try await connection.listen(channel)
            listening.insert(channel)
        }
    }

    private func publish(_ event: ListenerEvent) {
        // The yield only enqueues (it resumes a waiting consumer, never runs it), so the lock is held
        // for as long as an enqueue takes.
        dropped.withLock { count in
            if case .dropped = continuation.yield(event) { count += 1 }
        }
    }

    private func setState(_ state: ListenerConnectionState) {
        shared.withLock { $0.state = state }
    }

    private static func unique(_ channels: [String]) -> [String] {
        var seen: Set<String> = []
        return channels.filter { seen.insert($0).inserted }
    }
}
