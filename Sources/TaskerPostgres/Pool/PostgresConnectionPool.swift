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
/// - The counting is `PostgresPoolState`, a pure state machine the actor steps synchronously: a
///   connection counts against `maxConnections` from the moment its opening is decided until its
///   close has finished, whatever the actor does at its awaits (checks by maintenance included), so
///   a replacement is opened only after the connection it replaces is closed.
/// - Lane `.operator` (the operator surface: health, templates, metrics) holds at most
///   `operatorMaxConnections` of them at once; the step pipeline keeps the rest.
public actor PostgresConnectionPool: Service {
    private typealias State = PostgresPoolState<PostgresConnection>
    private typealias Pooled = State.Entry

    public nonisolated let configuration: PostgresPoolConfiguration
    private let logger: Logger
    /// Failed opens while the database is down: one explained line per 30 s (`RepeatedFailureLog`).
    private let openFailures = RepeatedFailureLog()
    private var state: State
    /// The continuations of waiting callers, by waiter id (their order is in `state.waiters`).
    private var continuations: [Int: (continuation: CheckedContinuation<Pooled, any Error>, timeout: Task<Void, Never>)] = [:]
    private var nextWaiterID = 0

    private var totalAcquires = 0
    private var slowAcquires = 0
    private var acquireErrors = 0
    private var successfulAcquires = 0
    private var totalAcquireSeconds = 0.0
    private var maxAcquireSeconds = 0.0
    private var connectionsOpened = 0
    private var connectionsReplaced = 0
    private var peakOpen = 0
    private var operatorAcquires = 0

    public init(configuration: PostgresPoolConfiguration, logger: Logger = Logger(label: "tasker.postgres.pool")) {
        self.configuration = configuration
        self.logger = logger
        self.state = State(
            maxConnections: configuration.maxConnections,
            operatorBudget: configuration.operatorMaxConnections)
    }

    // MARK: - Using connections

    /// Lends a connection to `body` and takes it back afterwards, whatever `body` does. Cancelling
    /// the calling task cancels the statement running on it (`PostgresConnection.cancellable`).
    /// `waitingAtMost`: how long to wait for a free connection (the configuration's `acquireTimeout`
    /// when nil); past it the call throws an `acquireTimeout` error without having run `body`.
    public func withConnection<T: Sendable>(
        lane: PostgresPoolLane = .pipeline, waitingAtMost wait: Duration? = nil,
        _ body: sending (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection = try await acquire(lane: lane, waitingAtMost: wait)
        do {
            let value = try await connection.cancellable { try await body(connection) }
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
    public func query(
        _ sql: String, _ parameters: [any PostgresEncodable] = [],
        lane: PostgresPoolLane = .pipeline
    ) async throws -> PostgresQueryResult {
        try await withConnection(lane: lane) { connection in try await connection.query(sql, parameters) }
    }

    /// Takes a connection out of the pool; it must be given back with `release(_:)`. Waits at most
    /// `waitingAtMost` (else the configuration's `acquireTimeout`) for one to become free.
    public func acquire(
        lane: PostgresPoolLane = .pipeline, waitingAtMost wait: Duration? = nil
    ) async throws(PostgresError) -> PostgresConnection {
        let started = ContinuousClock.now
        totalAcquires += 1
        if lane == .operator { operatorAcquires += 1 }
        do {
            let pooled = try await obtain(lane, waitingAtMost: wait ?? configuration.acquireTimeout)
            recordAcquire(since: started)
            return pooled.connection
        } catch {
            acquireErrors += 1
            throw error
        }
    }

    /// Gives a connection back. A broken one, or one left inside a transaction, or one past its
    /// `maxLifetime`, is closed instead (and one is opened for a waiter, if any).
    public func release(_ connection: PostgresConnection) async {
        // Read without a hop to the connection's thread: its state after the caller's last statement.
        let reusable = connection.isReusable
        let tooOld = lentAge(connection).map { $0 > configuration.maxLifetime } ?? false
        guard let (_, actions) = state.release(connection, reusable: reusable && !tooOld, now: .now) else {
            logger.warning("released a connection that this pool did not lend")
            return
        }
        perform(actions)
        if !reusable && !state.isClosed {
            connectionsReplaced += 1
            let pid = await connection.backendPID
            logger.info("discarding a broken database connection", metadata: ["backend_pid": "\(pid)"])
        }
    }

    /// The pool's current figures.
    public var statistics: PostgresPoolStatistics {
        // A connection being checked for liveness (before lending it, or by maintenance) or being
        // opened is neither idle nor lent: it counts as active, so that active + idle is the pool's
        // size at every moment.
        PostgresPoolStatistics(
            active: state.busyCount, idle: state.idle.count, max: configuration.maxConnections,
            min: configuration.minConnections, waiting: state.waiters.count, totalAcquires: totalAcquires,
            slowAcquires: slowAcquires, acquireErrors: acquireErrors,
            averageAcquireMs: successfulAcquires == 0 ? 0 : totalAcquireSeconds * 1000 / Double(successfulAcquires),
            maxAcquireMs: maxAcquireSeconds * 1000, connectionsOpened: connectionsOpened,
            connectionsReplaced: connectionsReplaced, peakConnections: peakOpen,
            operatorActive: state.held(by: .operator), operatorAcquires: operatorAcquires)
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
        let (idle, waiters) = state.close()
        for connection in idle { discard(connection) }
        for id in waiters {
            resume(id, with: .failure(PostgresError(.shutdown, "the connection pool is closed")))
        }
    }

    // MARK: - Internals

    private func obtain(_ lane: PostgresPoolLane, waitingAtMost timeout: Duration) async throws(PostgresError) -> Pooled {
        while true {
            let id = nextWaiterID
            nextWaiterID += 1
            switch state.acquire(lane, waiterID: id) {
            case .closed:
                throw PostgresError(.shutdown, "the connection pool is closed")
            case .wait(let id):
                return try await waitForConnection(id, timeout: timeout)
            case .open:
                do {
                    let pooled = try await openConnection()
                    state.lend(pooled, to: lane)
                    return pooled
                } catch {
                    perform(state.dropReserved(lane))
                    throw error
                }
            case .candidate(let candidate):
                if age(candidate) > configuration.maxLifetime {
                    connectionsReplaced += 1
                    perform(state.discardReserved(candidate.connection, lane))
                    continue
                }
                // Nothing arrived on its socket while idle: lent at once (poll(2) here instead of a hop
                // to the connection's thread on every acquire). Anything there (a terminated backend's
                // FATAL message, EOF) gets the full check; it stays counted meanwhile.
                if candidate.connection.hasPendingInput, !(await candidate.connection.checkAlive()) {
                    connectionsReplaced += 1
                    perform(state.discardReserved(candidate.connection, lane))
                    continue
                }
                state.lend(candidate, to: lane)
                return candidate
            }
        }
    }

    private func openConnection() async throws(PostgresError) -> Pooled {
        let connection = try await PostgresConnection.connect(
            url: configuration.url, applicationName: configuration.applicationName,
            connectTimeout: configuration.connectTimeout, limits: configuration.sessionLimits,
            route: configuration.route, logger: logger)
        connectionsOpened += 1
        peakOpen = max(peakOpen, state.openCount)
        let now = ContinuousClock.now
        return Pooled(connection: connection, openedAt: now, lastUsed: now)
    }

    private func waitForConnection(_ id: Int, timeout: Duration) async throws(PostgresError) -> Pooled {
        let max = configuration.maxConnections
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Pooled, any Error>) in
                    let timer = Task { [weak self] in
                        try? await Task.sleep(for: timeout)
                        guard !Task.isCancelled else { return }
                        await self?.failWaiter(
                            id,
                            PostgresError(
                                .acquireTimeout,
                                "no database connection became free within \(timeout) (pool max \(max))"))
                    }
                    continuations[id] = (continuation, timer)
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
        guard let actions = state.removeWaiter(id) else { return }
        resume(id, with: .failure(error))
        perform(actions)
    }

    private func resume(_ id: Int, with result: Result<Pooled, PostgresError>) {
        guard let waiter = continuations.removeValue(forKey: id) else { return }
        waiter.timeout.cancel()
        waiter.continuation.resume(with: result.mapError { $0 as any Error })
    }

    /// Carries out what the state machine decided; `openError` is what a waiter whose open failed
    /// is failed with.
    private func perform(_ actions: [State.Action], openError: PostgresError? = nil) {
        for action in actions {
            switch action {
            case .resume(let waiter, let pooled):
                resume(waiter, with: .success(pooled))
            case .close(let connection):
                discard(connection)
            case .open(let slot):
                Task { await self.open(for: slot) }
            case .fail(let waiter):
                resume(waiter, with: .failure(openError ?? PostgresError(.connectionFailed, "could not open a database connection")))
            }
        }
    }

    /// Opens a connection for a slot `perform` reserved (nil: for maintenance, awaited there).
    private func open(for slot: State.OpenForWaiter?) async {
        do {
            let pooled = try await openConnection()
            openFailures.recovered()
            perform(state.opened(pooled, for: slot))
        } catch {
            openFailures.failed(logger, "could not open a database connection", error: error)
            perform(state.openFailed(for: slot), openError: error)
        }
    }

    private func maintain() async {
        let now = ContinuousClock.now
        // The idle connections are taken out (and stay counted) while they are checked; each goes
        // back — to a waiter or idle — as soon as it is found alive.
        for pooled in state.beginMaintenance() {
            let tooOld = age(pooled) > configuration.maxLifetime
            let idleTooLong =
                state.isSurplus(minConnections: configuration.minConnections)
                && pooled.lastUsed.duration(to: now) > configuration.idleTimeout
            let alive = tooOld || idleTooLong ? false : await pooled.connection.checkAlive()
            if !alive && !idleTooLong { connectionsReplaced += 1 }
            perform(state.checked(pooled, alive: alive))
        }
        while state.reserveMaintenanceOpen(minConnections: configuration.minConnections) {
            let before = connectionsOpened
            await open(for: nil)
            if connectionsOpened == before { break }
        }
    }

    /// Closes a connection the state counts as closing; its slot frees when the close finished.
    private func discard(_ connection: PostgresConnection) {
        Task {
            await connection.close()
            self.closeFinished()
        }
    }

    private func closeFinished() {
        perform(state.closeFinished())
    }

    private func age(_ pooled: Pooled) -> Duration {
        pooled.openedAt.duration(to: .now)
    }

    private func lentAge(_ connection: PostgresConnection) -> Duration? {
        state.lent[ObjectIdentifier(connection)].map { age($0.entry) }
    }

    private func recordAcquire(since started: ContinuousClock.Instant) {
        let elapsed = started.duration(to: .now)
        let seconds = elapsed.inSeconds
        successfulAcquires += 1
        totalAcquireSeconds += seconds
        maxAcquireSeconds = max(maxAcquireSeconds, seconds)
        if elapsed > configuration.slowAcquireThreshold { slowAcquires += 1 }
    }
}
