/// How a connection reaches the server, which decides what it may keep in its session.
///
/// - `direct`: the connection is a server session of its own (PostgreSQL itself, or a pooler in
///   session mode). Statements are prepared once per session and executed by name; the session
///   settings (`PostgresConnection.sessionOptions`, `PostgresSessionLimits`) go in the startup packet.
/// - `transactionPooler`: the connection goes through a pooler in transaction mode (PgBouncer's
///   `pool_mode = transaction`): each transaction may run in another server session, shared with
///   other clients. Nothing may live in the session: every statement is sent unnamed with its
///   parameters (Parse, Bind, Execute in one round trip, never `PREPARE`d), and no `options` go in
///   the startup packet (PgBouncer refuses or drops them), so `search_path`, `TimeZone`, `DateStyle`
///   and the timeouts come from the role's or the database's settings (`ALTER ROLE … SET`,
///   `ALTER DATABASE … SET`), which `PostgresSessionCheck` verifies. LISTEN needs a `direct` session.
public enum PostgresRoute: String, Sendable, Equatable, CaseIterable {
    case direct
    case transactionPooler = "transaction_pooler"

    /// Whether named prepared statements can be used: only in a session of one's own.
    public var preparesStatements: Bool { self == .direct }
}
