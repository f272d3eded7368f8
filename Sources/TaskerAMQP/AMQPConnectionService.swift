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
    private let current = Mutex(Current())

    /// The state, and the tasks waiting for it to change (`connection(after:)`), under one lock so that
    /// no change is missed between a waiter's look and its registration.
    private struct Current {
        var state = AMQPConnectionState.connecting(attempt: 0)
        var connection: AMQPConnection?
        var generation = 0
        var nextWaiter = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

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

    /// Returns the open connection once one newer than `generation` is connected (at once when it
    /// already is) with its generation, or nil once the service has stopped or the calling task is
    /// cancelled. Waits on the state's changes (no polling): a consumer calls it with the generation
    /// it last consumed on, to start again on the next connection.
    public func connection(after generation: Int) async -> (connection: AMQPConnection, generation: Int)? {
        while !Task.isCancelled {
            let id = current.withLock { current -> Int in
                current.nextWaiter += 1
                return current.nextWaiter
            }
            // Whether the wait is over: a newer connection, the service stopped (nil), or not yet.
            let ready = { (current: Current) -> (AMQPConnection, Int)?? in
                if current.state == .stopped { return .some(nil) }
                if current.state == .connected, current.generation > generation, let live = current.connection {
                    return .some((live, current.generation))
                }
                return nil
            }
            if let outcome = current.withLock({ ready($0) }) { return outcome.map { (connection: $0.0, generation: $0.1) } }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = current.withLock { current -> Bool in
                        if ready(current) != nil || Task.isCancelled { return true }
                        current.waiters[id] = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onCancel: {
                current.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
            }
        }
        return nil
    }

    private func set(_ state: AMQPConnectionState, connection: AMQPConnection? = nil, newGeneration: Bool = false) {
        let waiters = current.withLock { current -> [CheckedContinuation<Void, Never>] in
            current.state = state
            current.connection = connection
            if newGeneration { current.generation += 1 }
            defer { current.waiters = [:] }
            return Array(current.waiters.values)
        }
        // Every change wakes the waiters; each looks again at the state (`connection(after:)`).
        for waiter in waiters { waiter.resume() }
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
