/// A statement that each connection prepares (`PQprepare`) the first time it runs it and then
/// executes by name (`PQexecPrepared`).
///
/// Why: the step path's statements (hydrate with its joins and subqueries, the claim and completion
/// CTEs) cost more to *plan* than to execute; an unnamed statement is planned on every call. Once
/// prepared, PostgreSQL reuses a generic plan after its first executions (measured in
/// docs/benchmarks.md: +30–40 % on the SQL floor). Declare hot statements once, as `static let`.
///
/// The name is derived from the SQL text (FNV-1a), so the same text always maps to the same name on
/// every connection and two different texts do not share one. Parameter types are fixed by the first
/// call's parameters (`PostgresEncodable.postgresType`), so a call site must pass the same types
/// every time — which a `static let` statement used from one place does.
public struct PreparedStatement: Sendable, Hashable {
    public let sql: String
    /// The server-side name (`tasker_<hash>`).
    public let name: String

    public init(_ sql: String) {
        self.sql = sql
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in sql.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        name = "tasker_" + String(hash, radix: 16)
    }
}

/// SQLSTATEs after which a session's prepared statements cannot be trusted.
extension PostgresError {
    /// 0A000 "cached plan must not change result type" (a table changed under a prepared
    /// statement), 26000 "prepared statement does not exist" (the session lost it), 42P05 "prepared
    /// statement already exists" (the session has one this connection did not record). The
    /// connection then closes itself: the pool replaces it with a fresh session, where every
    /// statement is prepared again. (Repairing the session in place would need statements that can
    /// fail in turn, inside a transaction the caller may still be in.)
    public var invalidatesPreparedStatements: Bool { sqlState == "0A000" || sqlState == "26000" || sqlState == "42P05" }
}
