import CLibPQ
import Foundation
import Logging
import Synchronization

/// One PostgreSQL connection over libpq, running on its own dedicated thread.
///
/// The actor's executor is a `DedicatedThreadExecutor`, so every blocking libpq call (connect,
/// execute, wait for a notification) runs on that thread and never on Swift's cooperative pool.
/// Actor isolation makes the `PGconn` single-user; methods are synchronous inside the actor, so a
/// transaction body (`transaction(_:)`) cannot be interleaved with another caller's statements.
///
/// Every connection runs with `search_path=tasker,public` (upstream SQL is unqualified),
/// `TimeZone=UTC` (naive `timestamp` columns hold UTC) and `DateStyle=ISO`, plus the caller's
/// `PostgresSessionLimits` (`statement_timeout`, `lock_timeout`). A task cancelled while it waits
/// on a statement inside `cancellable` (every pooled use) cancels that statement on the server.
public actor PostgresConnection {
    /// The session settings every connection starts with.
    public static let sessionOptions = "-c search_path=tasker,public -c TimeZone=UTC -c DateStyle=ISO,MDY"

    private let executor: DedicatedThreadExecutor
    let waiter: SocketWaiter
    private let noticeSink: NoticeSink
    /// Sends `PQcancel` for the running statement when the waiting task is cancelled.
    let canceller: StatementCanceller
    private var handle: OpaquePointer?
    /// Names of the `PreparedStatement`s this session has prepared.
    var prepared: Set<String> = []
    /// Connected and outside a transaction, as of the last statement: what the pool reads on
    /// release without a hop to this connection's thread (written only on this thread).
    private let reusableState = Atomic<Bool>(false)
    /// The session's socket while open (-1 when closed), for `hasPendingInput` from other threads.
    private let socketFD = Atomic<Int32>(-1)
    /// Server process id of this session (for `pg_terminate_backend`, logs). Through a transaction
    /// pooler: the pooler's own number for the client, no server process's.
    public private(set) var backendPID: Int32 = 0
    /// How this connection reaches the server (`PostgresRoute`): whether statements may be prepared.
    public nonisolated let route: PostgresRoute
    public nonisolated let logger: Logger

    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor.asUnownedSerialExecutor()
    }

    /// Throws when the system is out of file descriptors or threads: the connect attempt fails
    /// (and is retried by its caller) instead of the process aborting.
    private init(label: String, route: PostgresRoute, logger: Logger) throws(SystemResourceError) {
        self.route = route
        let waiter = try SocketWaiter()
        self.waiter = waiter
        self.canceller = StatementCanceller(wake: { waiter.wake() })
        self.executor = try DedicatedThreadExecutor(name: label)
        self.logger = logger
        self.noticeSink = NoticeSink(logger: logger)
    }

    // Runs on the connection's own thread, then lets that thread exit.
    isolated deinit {
        if let handle { PQfinish(handle) }
        executor.shutdown()
    }

    /// Opens a connection. `url` is a `postgresql://` URL or a libpq conninfo string.
    /// Waits at most `connectTimeout` (a black-holed host included); cancelling the calling task
    /// abandons the attempt at once. `limits`: the session's `statement_timeout` / `lock_timeout`
    /// (`direct` only). `route`: whether `url` is a server session of its own (`PostgresRoute`).
    public static func connect(
        url: String,
        applicationName: String = "tasker-worker",
        connectTimeout: Duration = .seconds(10),
        limits: PostgresSessionLimits = .serverDefaults,
        route: PostgresRoute = .direct,
        logger: Logger = Logger(label: "tasker.postgres")
    ) async throws(PostgresError) -> PostgresConnection {
        let connection: PostgresConnection
        do {
            connection = try PostgresConnection(label: "pg-\(applicationName)", route: route, logger: logger)
        } catch {
            throw PostgresError(.connectionFailed, "cannot connect to \(Self.redact(url)): \(error)")
        }
        do {
            try await withTaskCancellationHandler {
                try await connection.open(
                    url: url, applicationName: applicationName, timeout: connectTimeout, limits: limits)
            } onCancel: {
                connection.interrupt()
            }
        } catch let error as PostgresError {
            throw error
        } catch {
            throw PostgresError(.connectionFailed, "\(error)")
        }
        return connection
    }

    /// Ends a blocking wait in progress (or the next one) on this connection. Any thread.
    public nonisolated func interrupt() {
        waiter.wake()
    }

    private func open(url: String, applicationName: String, timeout: Duration, limits: PostgresSessionLimits) throws(PostgresError) {
        // libpq reads the parameters in order: the TCP keepalive settings (so a dead peer is noticed
        // in about a minute, not the kernel's two hours) come before the URL, which may override
        // them; the session options and application name come after it and always apply. Through a
        // transaction pooler no options are sent: its server sessions take the role's settings.
        var keys = ["keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count", "dbname"]
        var values = ["1", "30", "10", "3", url]
        if route == .direct {
            keys.append("options")
            values.append(limits.options.isEmpty ? Self.sessionOptions : Self.sessionOptions + " " + limits.options)
        }
        keys.append("application_name")
        values.append(applicationName)
        let raw: OpaquePointer? = CStringArray.with(keys) { keyPtrs in
            CStringArray.with(values) { valuePtrs in
                PQconnectStartParams(keyPtrs, valuePtrs, 1)
            }
        }
        guard let conn = raw else { throw PostgresError(.connectionFailed, "libpq could not allocate a connection") }
        handle = conn
        if PQstatus(conn) == CONNECTION_BAD {
            throw connectFailure(conn, url: url)
        }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var status = PGRES_POLLING_WRITING
        while status != PGRES_POLLING_OK {
            switch status {
            case PGRES_POLLING_FAILED:
                throw connectFailure(conn, url: url)
            case PGRES_POLLING_READING, PGRES_POLLING_WRITING:
                let interest: SocketWaiter.Interest = status == PGRES_POLLING_READING ? .read : .write
                switch waiter.wait(socket: PQsocket(conn), for: interest, deadline: deadline) {
                case .ready: break
                case .woken:
                    closeHandle()
                    throw PostgresError(.cancelled, "connecting to \(Self.redact(url)) was cancelled")
                case .timedOut:
                    closeHandle()
                    throw PostgresError(.connectionFailed, "connecting to \(Self.redact(url)) timed out after \(timeout)")
                }
            default:
                break
            }
            status = PQconnectPoll(conn)
        }
        PQsetNoticeProcessor(conn, noticeProcessor, Unmanaged.passUnretained(noticeSink).toOpaque())
        backendPID = PQbackendPID(conn)
        canceller.connected(CancelRequestHandle(connection: conn))
        socketFD.store(PQsocket(conn), ordering: .releasing)
        publishState()
    }

    private func connectFailure(_ conn: OpaquePointer, url: String) -> PostgresError {
        let message = Self.errorMessage(conn)
        closeHandle()
        return PostgresError(.connectionFailed, "cannot connect to \(Self.redact(url)): \(message)")
    }

    /// Closes the connection; later calls fail with `connectionClosed`. Returns once the server has
    /// closed the session too (its backend is gone, e.g. from `pg_stat_activity`), or after
    /// `closeWait` when it does not answer: so a pool that opens a replacement only after a close
    /// finished never has more sessions on the server than its maximum.
    public func close() {
        guard let handle else { return }
        let socket = PQsocket(handle)
        let watched = socket >= 0 ? dup(socket) : -1
        closeHandle()  // sends Terminate
        guard watched >= 0 else { return }
        SocketWaiter.waitForPeerClose(socket: watched, deadline: ContinuousClock.now.advanced(by: Self.closeWait))
    }

    /// The longest `close()` waits for the server to end the session.
    static let closeWait: Duration = .seconds(1)

    func closeHandle() {
        canceller.disconnected()
        if let handle { PQfinish(handle) }
        handle = nil
        prepared.removeAll()
        reusableState.store(false, ordering: .releasing)
        socketFD.store(-1, ordering: .releasing)
    }

    func publishState() {
        guard let handle else { return reusableState.store(false, ordering: .releasing) }
        reusableState.store(
            PQstatus(handle) == CONNECTION_OK && PQtransactionStatus(handle) == PQTRANS_IDLE,
            ordering: .releasing)
    }

    /// True when the server sent something while this connection sat idle (or it is closed): only
    /// then is `checkAlive()` worth a hop to the connection's thread. A backend the server
    /// terminates sends its FATAL message and closes the socket, which makes it readable.
    /// Call only while no one uses the connection (the pool calls it on idle connections).
    public nonisolated var hasPendingInput: Bool {
        SocketWaiter.hasInput(socket: socketFD.load(ordering: .acquiring))
    }

    /// Connected and not inside a transaction after the last statement, read from any thread
    /// (the pool decides on release whether to keep the connection, without waiting for this thread).
    public nonisolated var isReusable: Bool { reusableState.load(ordering: .acquiring) }

    /// True while libpq considers the connection usable.
    public var isConnected: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// Reads whatever the server sent without blocking and reports whether the connection is still
    /// usable: a backend the server terminated while the connection sat idle shows up here.
    public func checkAlive() -> Bool {
        guard let handle else { return false }
        // The first read may only pick up the server's FATAL message; the second then sees EOF.
        // On a live idle connection both return at once with nothing to read. PQisBusy parses what
        // arrived: an error while idle (the server's "terminating connection" FATAL, sent before it
        // closes the socket) reaches the notice processor, which remembers it.
        if PQconsumeInput(handle) == 0 || PQconsumeInput(handle) == 0 || PQstatus(handle) != CONNECTION_OK
            || (PQisBusy(handle) == 0 && noticeSink.sawFatal)
        {
            closeHandle()
            return false
        }
        return true
    }

    /// True when the session is idle (not inside a transaction block).
    public var isIdle: Bool {
        guard let handle else { return false }
        return PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    // MARK: - Statements

    /// Runs one parameterized statement (`$1`, `$2`, …) and returns its rows.
    @discardableResult
    public func query(_ sql: String, _ parameters: [any PostgresEncodable] = []) throws(PostgresError) -> PostgresQueryResult {
        try runStatement { () throws(PostgresError) in try queryNow(sql, parameters) }
    }

    private func queryNow(_ sql: String, _ parameters: [any PostgresEncodable]) throws(PostgresError) -> PostgresQueryResult {
        let conn = try liveHandle()
        let types = parameters.map { $0.postgresType }
        let texts = parameters.map { $0.postgresText }
        let sent = CStringArray.withOptional(texts) { valuePtrs in
            types.withUnsafeBufferPointer { typePtr in
                PQsendQueryParams(conn, sql, Int32(parameters.count), typePtr.baseAddress, valuePtrs, nil, nil, 0)
            }
        }
        return try consume(sent == 1 ? try lastResult(conn) : nil, conn: conn, sql: sql)
    }

    /// Runs a prepared statement: prepared on this connection at its first use, then executed by
    /// name (see `PreparedStatement`); through a transaction pooler, sent unnamed every time.
    @discardableResult
    public func query(
        _ statement: PreparedStatement, _ parameters: [any PostgresEncodable] = []
    ) throws(PostgresError) -> PostgresQueryResult {
        try runStatement { () throws(PostgresError) in try queryNow(statement, parameters) }
    }

    private func queryNow(
        _ statement: PreparedStatement, _ parameters: [any PostgresEncodable]
    ) throws(PostgresError) -> PostgresQueryResult {
        guard route.preparesStatements else { return try queryNow(statement.sql, parameters) }
        let conn = try liveHandle()
        if !prepared.contains(statement.name) {
            let types = parameters.map { $0.postgresType }
            let sent = types.withUnsafeBufferPointer { typePtr in
                PQsendPrepare(conn, statement.name, statement.sql, Int32(types.count), typePtr.baseAddress)
            }
            try consume(sent == 1 ? try lastResult(conn) : nil, conn: conn, sql: statement.sql)
            prepared.insert(statement.name)
        }
        let texts = parameters.map { $0.postgresText }
        let sent = CStringArray.withOptional(texts) { valuePtrs in
            PQsendQueryPrepared(conn, statement.name, Int32(parameters.count), valuePtrs, nil, nil, 0)
        }
        do {
            return try consume(sent == 1 ? try lastResult(conn) : nil, conn: conn, sql: statement.sql)
        } catch {
            if error.invalidatesPreparedStatements { closeHandle() }
            throw error
        }
    }

    /// Runs a script of one or more statements without parameters (simple query protocol), e.g. a
    /// migration file. Returns the last statement's rows.
    @discardableResult
    public func execute(_ script: String) throws(PostgresError) -> PostgresQueryResult {
        try runStatement { () throws(PostgresError) in
            let conn = try liveHandle()
            let sent = PQsendQuery(conn, script)
            return try consume(sent == 1 ? try lastResult(conn) : nil, conn: conn, sql: script)
        }
    }

    /// Runs `body` inside `BEGIN … COMMIT`; any thrown error rolls the transaction back and is rethrown.
    /// `settings` (e.g. `SET LOCAL statement_timeout = 5000`) are sent with `BEGIN` in the same
    /// round trip.
    @discardableResult
    public func transaction<T: Sendable>(
        settings: String? = nil,
        _ body: @Sendable (isolated PostgresConnection) throws -> T
    ) throws -> T {
        try execute(settings.map { "BEGIN; \($0)" } ?? "BEGIN")
        let value: T
        do {
            value = try body(self)
        } catch {
            rollbackQuietly()
            throw error
        }
        do {
            try execute("COMMIT")
        } catch {
            rollbackQuietly()
            throw error
        }
        return value
    }

    func rollbackQuietly() {
        guard isConnected else { return }
        do { try execute("ROLLBACK") } catch {
            logger.warning("ROLLBACK failed", metadata: ["error": "\(error)"])
        }
    }

    /// Quotes an identifier with libpq's `PQescapeIdentifier`.
    public func quoteIdentifier(_ name: String) throws(PostgresError) -> String {
        let conn = try liveHandle()
        guard let escaped = PQescapeIdentifier(conn, name, name.utf8.count) else {
            throw PostgresError(.usage, "cannot quote identifier \"\(name)\": \(Self.errorMessage(conn))")
        }
        defer { PQfreemem(escaped) }
        return String(cString: escaped)
    }

    // MARK: - Results

    func liveHandle() throws(PostgresError) -> OpaquePointer {
        guard let handle else { throw PostgresError(.connectionClosed, "connection is closed") }
        return handle
    }

    @discardableResult
    private func consume(_ result: OpaquePointer?, conn: OpaquePointer, sql: String) throws(PostgresError) -> PostgresQueryResult {
        defer { publishState() }
        guard let result else {
            let message = Self.errorMessage(conn)
            let lost = PQstatus(conn) != CONNECTION_OK
            if lost { closeHandle() }
            throw PostgresError(lost ? .connectionClosed : .server, message, query: Self.shorten(sql))
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY, PGRES_SINGLE_TUPLE:
            return Self.copyRows(result)
        default:
            var error = Self.serverError(result, sql: sql)
            if PQstatus(conn) != CONNECTION_OK {
                closeHandle()
                error.kind = .connectionClosed
            }
            throw error
        }
    }

    /// `url` (a URL or keyword DSN) with its passwords hidden; see `Redaction.redactCredentials`.
    public static func redact(_ url: String) -> String {
        Redaction.redactCredentials(url)
    }
}
