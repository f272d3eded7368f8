import AsyncAlgorithms
import Logging
import ServiceLifecycle

/// A bounded pool of `PostgresConnection`s.
///
/// - At most `maxConnections` are open; callers beyond that wait up to `acquireTimeout`, then get an
///   `acquireTimeout` error.
/// - A connection that broke while lent out, or whose socket shows the server closed it while idle,
///   is discarded and replaced; so are connections older than `maxLifetime`.
/// - As a `Service`, `run()` opens `minConnections` up front and keeps the pool between
///   `minConnections` and `maxConnections`, closing connections idle for longer than `idleTimeout`.
///   The pool also works without `run()` (connections are then opened on demand).
public actor PostgresConnectionPool: Service {
    private struct Pooled {
        let connection: PostgresConnection
        let openedAt: ContinuousClock.Instant
        var lastUsed: ContinuousClock.Instant
    }

    private struct Waiter {
        let id: Int
        let continuation: CheckedContinuation<Pooled, any Error>
        let timeout: Task<Void, Never>
    }

    public nonisolated let configuration: PostgresPoolConfiguration
    private let logger: Logger
    private var idle: [Pooled] = []
    private var lent: [ObjectIdentifier: Pooled] = [:]
    private var opening = 0
    /// Connections taken out of `idle` or `lent` while an `await` checks them: still open, so they
    /// count against `maxConnections`, but in neither list (actor reentrancy must not see them).
    private var checking = 0
    private var waiters: [Waiter] = []
    private var nextWaiterID = 0
    private var isClosed = false

    private var totalAcquires = 0
    private var slowAcquires = 0
    private var acquireErrors = 0
    private var successfulAcquires = 0
    private var totalAcquireSeconds = 0.0
    private var maxAcquireSeconds = 0.0
    private var connectionsOpened = 0
    private var connectionsReplaced = 0

    public init(configuration: PostgresPoolConfiguration, logger: Logger = Logger(label: "tasker.postgres.pool")) {
        self.configuration = configuration
        self.logger = logger
    }

    // MARK: - Using connections

    /// Lends a connection to `body` and takes it back afterwards, whatever `body` does.
    public func withConnection<T: Sendable>(
        _ body: sending (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection = try await acquire()
        do {
            let value = try await body(connection)
            await release(connection)
            return value
        } catch {
            await release(connection)
            throw error
        }
    }

    /// Runs `body` in a transaction on a pooled connection (rolled back on any error).
    public func transaction<T: Sendable>(
        _ body: @escaping @Sendable (isolated PostgresConnection) throws -> T
    ) async throws -> T {
        try await withConnection { connection in try await connection.transaction(body) }
    }

    /// Runs one statement on a pooled connection.
    @discardableResult
    public func query(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws -> PostgresQueryResult {
        try await withConnection { connection in try await connection.query(sql, parameters) }
    }

    /// Takes a connection out of the pool; it must be given back with `release(_:)`.
    public func acquire() async throws(PostgresError) -> PostgresConnection {
        let started = ContinuousClock.now
        totalAcquires += 1
        do {
            let pooled = try await obtain()
            lent[ObjectIdentifier(pooled.connection)] = pooled
            recordAcquire(since: started)
            return pooled.connection
        } catch {
            acquireErrors += 1
            throw error
        }
    }

    /// Gives a connection back. A broken one, or one left inside a transaction, is closed instead.
    public func release(_ connection: PostgresConnection) async {
        guard var pooled = lent.removeValue(forKey: ObjectIdentifier(connection)) else {
            logger.warning("released a connection that this pool did not lend")
            return
        }
        // Read without a hop to the connection's thread: its state after the caller's last statement.
        let reusable = connection.isReusable
        if !reusable || isClosed || age(pooled) > configuration.maxLifetime {
            if !reusable && !isClosed {
                connectionsReplaced += 1
                let pid = await connection.backendPID
                logger.info("discarding a broken database connection", metadata: ["backend_pid": "\(pid)"])
            }
            discard(connection)
            replenishForWaiters()
            return
        }
        pooled.lastUsed = .now
        if !waiters.isEmpty {
            let waiter = waiters.removeFirst()
            waiter.timeout.cancel()
            waiter.continuation.resume(returning: pooled)
        } else {
            idle.append(pooled)
        }
    }

    /// The pool's current figures.
    public var statistics: PostgresPoolStatistics {
        // A connection being checked for liveness (before lending it, or by maintenance) is neither
        // idle nor lent: it counts as active, so that active + idle is the pool's size at every moment.
        PostgresPoolStatistics(
            active: lent.count + checking, idle: idle.count, max: configuration.maxConnections,
            min: configuration.minConnections, waiting: waiters.count, totalAcquires: totalAcquires,
            slowAcquires: slowAcquires, acquireErrors: acquireErrors,
            averageAcquireMs: successfulAcquires == 0 ? 0 : totalAcquireSeconds * 1000 / Double(successfulAcquires),
            maxAcquireMs: maxAcquireSeconds * 1000, connectionsOpened: connectionsOpened,
            connectionsReplaced: connectionsReplaced)
    }

    // MARK: - Service

    /// Opens `minConnections`, then maintains the pool until graceful shutdown or cancellation,
    /// and closes every connection on the way out.
    public func run() async throws {
        await maintain()
        let ticks = AsyncTimerSequence(interval: configuration.maintenanceInterval, clock: .continuous)
        for await _ in ticks.cancelOnGracefulShutdown() {
            await maintain()
        }
        close()
    }

    /// Closes idle connections and fails waiters; connections still lent out close on release.
    public func close() {
        isClosed = true
        for pooled in idle { discard(pooled.connection) }
        idle.removeAll()
        for waiter in waiters {
            waiter.timeout.cancel()
            waiter.continuation.resume(throwing: PostgresError(.shutdown, "the connection pool is closed"))
        }
        waiters.removeAll()
    }

    // MARK: - Internals

    private func obtain() async throws(PostgresError) -> Pooled {
        if isClosed { throw PostgresError(.shutdown, "the connection pool is closed") }
        while let candidate = idle.popLast() {
            guard age(candidate) <= configuration.maxLifetime else {
                connectionsReplaced += 1
                discard(candidate.connection)
                continue
            }
            // Nothing arrived on its socket while idle: lent at once (poll(2) here instead of a hop
            // to the connection's thread on every acquire). Anything there (a terminated backend's
            // FATAL message, EOF) gets the full check.
            if !candidate.connection.hasPendingInput { return candidate }
            checking += 1
            let alive = await candidate.connection.checkAlive()
            checking -= 1
            if alive {
                return candidate
            }
            connectionsReplaced += 1
            discard(candidate.connection)
        }
        if openCount < configuration.maxConnections {
            return try await openConnection()
        }
        return try await waitForConnection()
    }

    private var openCount: Int { idle.count + lent.count + opening + checking }

    private func openConnection() async throws(PostgresError) -> Pooled {
        opening += 1
        defer { opening -= 1 }
        let connection = try await PostgresConnection.connect(
            url: configuration.url, applicationName: configuration.applicationName,
            connectTimeout: configuration.connectTimeout, logger: logger)
        connectionsOpened += 1
        let now = ContinuousClock.now
        return Pooled(connection: connection, openedAt: now, lastUsed: now)
    }

    private func waitForConnection() async throws(PostgresError) -> Pooled {
        let id = nextWaiterID
        nextWaiterID += 1
        let timeout = configuration.acquireTimeout
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Pooled, any Error>) in
                    let timer = Task { [weak self] in
                        try? await Task.sleep(for: timeout)
                        guard !Task.isCancelled else { return }
                        await self?.failWaiter(id, PostgresError(.acquireTimeout,
                            "no database connection became free within \(timeout) (pool max \(self?.configuration.maxConnections ?? 0))"))
                    }
                    waiters.append(Waiter(id: id, continuation: continuation, timeout: timer))
                }
            } onCancel: {
                Task { await self.failWaiter(id, PostgresError(.cancelled, "waiting for a database connection was cancelled")) }
            }
        } catch let error as PostgresError {
            throw error
        } catch {
            throw PostgresError(.usage, "\(error)")
        }
    }

    private func failWaiter(_ id: Int, _ error: PostgresError) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        let waiter = waiters.remove(at: index)
        waiter.timeout.cancel()
        waiter.continuation.resume(throwing: error)
    }

    /// After a connection was discarded, open a replacement for the first waiter, if any.
    private func replenishForWaiters() {
        guard !waiters.isEmpty, !isClosed, openCount < configuration.maxConnections else { return }
        Task {
            do {
                let pooled = try await self.openConnection()
                self.handOver(pooled)
            } catch {
                logger.warning("could not open a replacement database connection", metadata: ["error": "\(error)"])
            }
        }
    }

    private func handOver(_ pooled: Pooled) {
        if !waiters.isEmpty {
            let waiter = waiters.removeFirst()
            waiter.timeout.cancel()
            waiter.continuation.resume(returning: pooled)
        } else if isClosed {
            discard(pooled.connection)
        } else {
            idle.append(pooled)
        }
    }

    private func maintain() async {
        guard !isClosed else { return }
        let now = ContinuousClock.now
        // Take the idle connections out while they are checked: other calls may run at each await
        // and must neither lend them nor see a stale list afterwards.
        let candidates = idle
        idle.removeAll()
        checking += candidates.count
        var kept: [Pooled] = []
        for pooled in candidates {
            let surplus = openCount + kept.count > configuration.minConnections
            let tooOld = age(pooled) > configuration.maxLifetime
            let idleTooLong = surplus && pooled.lastUsed.duration(to: now) > configuration.idleTimeout
            let alive = tooOld || idleTooLong ? false : await pooled.connection.checkAlive()
            checking -= 1
            if alive {
                kept.append(pooled)
            } else {
                if !idleTooLong { connectionsReplaced += 1 }
                discard(pooled.connection)
            }
        }
        for pooled in kept { handOver(pooled) }
        while !isClosed && openCount < configuration.minConnections {
            do {
                let pooled = try await openConnection()
                handOver(pooled)
            } catch {
                logger.warning("could not open a database connection", metadata: ["error": "\(error)"])
                break
            }
        }
    }

    private func discard(_ connection: PostgresConnection) {
        Task { await connection.close() }
    }

    private func age(_ pooled: Pooled) -> Duration {
        pooled.openedAt.duration(to: .now)
    }

    private func recordAcquire(since started: ContinuousClock.Instant) {
        let elapsed = started.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        successfulAcquires += 1
        totalAcquireSeconds += seconds
        maxAcquireSeconds = max(maxAcquireSeconds, seconds)
        if elapsed > configuration.slowAcquireThreshold { slowAcquires += 1 }
    }
}
