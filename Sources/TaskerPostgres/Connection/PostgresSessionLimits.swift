/// The server-side limits every session starts with: `statement_timeout` (a statement running
/// longer is cancelled by the server, SQLSTATE 57014) and `lock_timeout` (a wait for a lock longer
/// than this fails, SQLSTATE 55P03). Sent in the startup packet (`options=-c …`), so they hold from
/// the first statement, for pooled, listener and dedicated connections alike. A `SET LOCAL` /
/// `set_config(…, true)` inside a transaction (the claim's own statement timeout) still overrides
/// them for that transaction. nil: the server's default (usually no limit).
public struct PostgresSessionLimits: Sendable, Equatable {
    public var statementTimeout: Duration?
    public var lockTimeout: Duration?

    public init(statementTimeout: Duration? = nil, lockTimeout: Duration? = nil) {
        self.statementTimeout = statementTimeout
        self.lockTimeout = lockTimeout
    }

    /// No limits of our own (the server's defaults).
    public static let serverDefaults = PostgresSessionLimits()

    /// The `-c name=value` settings for libpq's `options` (empty when both are nil). Whole
    /// milliseconds, at least 1 (0 would turn the limit off).
    var options: String {
        var settings: [String] = []
        if let statementTimeout { settings.append("-c statement_timeout=\(max(1, statementTimeout.inMilliseconds))") }
        if let lockTimeout { settings.append("-c lock_timeout=\(max(1, lockTimeout.inMilliseconds))") }
        return settings.joined(separator: " ")
    }
}
