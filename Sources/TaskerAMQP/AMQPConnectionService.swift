import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The state of an `AMQPConnectionService`'s connection, for health checks.
public enum AMQPConnectionState: Sendable, Hashable, CustomStringConvertible {
    /// Connecting; `attempt` counts failures since the last good connection.
    case connecting(attempt: Int)
    /// Connected and the setup ran.
    case connected
    /// Lost; waiting before the next attempt.
    case disconnected(reason: String)
    /// The service has stopped.
    case stopped

    public var description: String {
        switch self {
        case .connecting(let attempt): "connecting (attempt \(attempt + 1))"
        case .connected: "connected"
        case .disconnected(let reason): "disconnected: \(reason)"
        case .stopped: "stopped"
        }
    }
}

/// Keeps one AMQP connection up: connects, runs the caller's `setup` (declarations, consumers) on
/// every new connection, and after a loss waits `delay(attempt)` and starts over, until the task is
/// cancelled or the service group shuts down gracefully (then the connection is closed).
///
/// A `Service` for swift-service-lifecycle; `run()` returns only at shutdown.
public final class AMQPConnectionService: Service, Sendable {
    public let configuration: AMQPConfiguration
    private let delay: @Sendable (Int) -> Duration
    private let setup: @Sendable (AMQPConnection) async throws -> Void
    private let logger: Logger
    private let eventLoopGroup: any EventLoopGroup
    private let current = Mutex<(state: AMQPConnectionState, connection: AMQPConnection?, generation: Int)>(
        (.connecting(attempt: 0), nil, 0))

    /// - Parameters:
    ///   - delay: the wait before reconnect attempt n (0-based), e.g. `ReconnectBackoff.delay(forAttempt:)`.
    ///   - setup: runs on each new connection before it counts as connected; if it throws, the
    ///     connection is closed and retried after the backoff.
    public init(
        configuration: AMQPConfiguration, delay: @escaping @Sendable (Int) -> Duration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "amqp"),
        setup: @escaping @Sendable (AMQPConnection) async throws -> Void
    ) {
        self.configuration = configuration
        self.delay = delay
        self.setup = setup
        self.logger = logger
        self.eventLoopGroup = eventLoopGroup
    }

    /// The connection state now.
    public var state: AMQPConnectionState { current.withLock { $0.state } }

    /// The open connection, when connected.
    public var connection: AMQPConnection? { current.withLock { $0.state == .connected ? $0.connection : nil } }

    /// How many connections have been set up so far (1 after the first, 2 after a reconnect…).
    public var generation: Int { current.withLock { $0.generation } }

    private func set(_ state: AMQPConnectionState, connection: AMQPConnection? = nil, newGeneration: Bool = false) {
        current.withLock {
            $0.state = state
            $0.connection = connection
            if newGeneration { $0.generation += 1 }
        }
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await self.keepConnected()
        }
        let last = current.withLock { $0.connection }
        await last?.close()
        set(.stopped)
    }

    private func keepConnected() async {
        var attempt = 0
        while !Task.isCancelled {
            set(.connecting(attempt: attempt))
            let reason: AMQPError
            do {
                let connection = try await AMQPConnection.connect(configuration, eventLoopGroup: eventLoopGroup, logger: logger)
                do {
                    try await setup(connection)
                } catch {
                    await connection.close()
                    throw error
                }
                attempt = 0
                set(.connected, connection: connection, newGeneration: true)
                logger.info("AMQP connected", metadata: ["broker": "\(configuration)"])
                reason = await withTaskCancellationHandler {
                    await connection.closed()
                } onCancel: {
                    Task { await connection.close() }
                }
            } catch let error as AMQPError {
                reason = error
            } catch {
                reason = .connectFailed(host: configuration.host, port: configuration.port, reason: "setup failed: \(error)")
            }
            if Task.isCancelled { break }
            set(.disconnected(reason: "\(reason)"))
            let wait = delay(attempt)
            logger.warning(
                "AMQP connection lost; reconnecting",
                metadata: [
                    "reason": "\(reason)",
                    "in_ms": "\(wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000)",
                ])
            attempt += 1
            do { try await Task.sleep(for: wait) } catch { break }
        }
    }
}
