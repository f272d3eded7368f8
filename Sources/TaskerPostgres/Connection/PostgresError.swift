/// An error from the PostgreSQL client: what failed, and the server's diagnostics when it has any.
///
/// `sqlState` separates the cases callers act on: `isUniqueViolation` (23505, e.g. a lost claim race)
/// is a normal outcome, while `isConnectionLoss` means the connection is gone and must be replaced.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// The broad class of failure.
    public enum Kind: String, Sendable {
        /// Could not open a connection (bad URL, refused, authentication failed, timeout).
        case connectionFailed
        /// The connection broke while in use.
        case connectionClosed
        /// The server rejected a statement; `sqlState` says why.
        case server
        /// A value could not be decoded into the requested Swift type.
        case decoding
        /// The caller used the API wrongly (unknown column, wrong parameter count, …).
        case usage
        /// Waiting for a pooled connection took longer than the acquire timeout.
        case acquireTimeout
        /// The pool or listener has been shut down.
        case shutdown
        /// The operation was cancelled.
        case cancelled
    }

    public var kind: Kind
    /// A short statement of what failed.
    public var message: String
    /// Five-character SQLSTATE code from the server (`23505` = unique violation).
    public var sqlState: String?
    public var detail: String?
    public var hint: String?
    public var constraint: String?
    public var table: String?
    public var column: String?
    /// The SQL that was running, shortened, for context in logs.
    public var query: String?
    /// The server process of the session the error came from (set by `pipeline`): lets a caller
    /// whose answer was lost make sure that session can no longer commit (`StepRepository.fence`).
    public var backendPID: Int32?

    public init(
        _ kind: Kind, _ message: String, sqlState: String? = nil, detail: String? = nil,
        hint: String? = nil, constraint: String? = nil, table: String? = nil, column: String? = nil,
        query: String? = nil
    ) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.hint = hint
        self.constraint = constraint
        self.table = table
        self.column = column
        self.query = query
    }

    /// 23505: a unique constraint rejected the row (for a step claim: another worker won).
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// 42P01 / 3F000 / 42883 / 42704: a table, schema, function or type the statement names does not
    /// exist (for Tasker's statements: the database was never migrated).
    public var isUndefinedObject: Bool {
        guard kind == .server, let state = sqlState else { return false }
        return ["42P01", "3F000", "42883", "42704"].contains(state)
    }
    /// 40001 / 40P01: serialization failure or deadlock; the transaction may be retried.
    public var isSerializationFailure: Bool { sqlState == "40001" || sqlState == "40P01" }
    /// The connection is unusable: it failed to open, broke, or the server is shutting it down
    /// (SQLSTATE class 08, 57P01–57P03).
    public var isConnectionLoss: Bool {
        if kind == .connectionFailed || kind == .connectionClosed { return true }
        guard let state = sqlState else { return false }
        return state.hasPrefix("08") || state == "57P01" || state == "57P02" || state == "57P03"
    }

    /// The server refused the data itself, for good: the same statement with the same values fails
    /// the same way however often it is retried. SQLSTATE class 22 (data exception: `22P05` a NUL
    /// character or an untranslatable one in `jsonb`, `22P02`/`22023` invalid input, numeric out of
    /// range…), 23 (integrity constraint violation) and 54 (program limit exceeded: a value or
    /// document too large, too deeply nested). Everything else — connection loss, serialization
    /// failure or deadlock (40), lock timeout (55P03), statement timeout or cancel (57014), admin
    /// shutdown (57P0x), too many connections and other insufficient resources (53), internal
    /// errors — may pass and is retried.
    public var isPermanentDataError: Bool {
        guard kind == .server, let state = sqlState else { return false }
        return state.hasPrefix("22") || state.hasPrefix("23") || state.hasPrefix("54")
    }

    /// Which server-side limit ended the statement, if one did.
    public enum Timeout: String, Sendable {
        /// `statement_timeout` (SQLSTATE 57014, "canceling statement due to statement timeout").
        case statement = "statement_timeout"
        /// `lock_timeout` (SQLSTATE 55P03, "canceling statement due to lock timeout").
        case lock = "lock_timeout"
    }

    /// The server limit that ended the statement: `statement_timeout` or `lock_timeout` (nil for
    /// any other error, a cancellation we asked for included). Both are retryable.
    public var timeout: Timeout? {
        guard kind == .server else { return nil }
        if sqlState == "55P03", message.contains("lock timeout") { return .lock }
        if sqlState == "57014", message.contains("statement timeout") { return .statement }
        return nil
    }

    /// The error's kind and SQLSTATE, without the server's text (for bodies of the operator surface).
    public var summary: String {
        "PostgreSQL \(kind.rawValue) error" + (sqlState.map { " [\($0)]" } ?? "")
    }

    /// The connection broke while statements were running or their answers were on the way, so
    /// whether a `COMMIT` among them took effect is unknown: the caller must ask the database.
    /// (An error the server reports for a statement, or a failure to connect, leaves no doubt.)
    public var leavesOutcomeUnknown: Bool {
        kind == .connectionClosed || (kind == .server && isConnectionLoss)
    }

    public var description: String {
        var text = "PostgreSQL \(kind.rawValue) error"
        if let sqlState { text += " [\(sqlState)]" }
        if let timeout { text += " (\(timeout.rawValue) reached)" }
        text += ": \(message)"
        if let detail { text += " (detail: \(detail))" }
        if let hint { text += " (hint: \(hint))" }
        if let constraint { text += " (constraint: \(constraint))" }
        if let query { text += " — in: \(query)" }
        return text
    }
}
