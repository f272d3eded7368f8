/// Settings of a `PostgresConnectionPool` (upstream keys: `common.database.pool.*`).
public struct PostgresPoolConfiguration: Sendable, Equatable {
    public var url: String
    public var maxConnections: Int
    public var minConnections: Int
    public var acquireTimeout: Duration
    /// Idle connections above `minConnections` are closed after this long unused.
    public var idleTimeout: Duration
    /// Connections are replaced after this age.
    public var maxLifetime: Duration
    /// Acquires slower than this count as slow in the statistics.
    public var slowAcquireThreshold: Duration
    public var connectTimeout: Duration
    public var applicationName: String
    /// How often `run()` prunes, checks and tops up idle connections.
    public var maintenanceInterval: Duration
    /// The most connections lane `.operator` (REST/gRPC health, template and metrics queries) holds
    /// at once, inside `maxConnections`; at most `maxConnections - 1`, so the step pipeline always
    /// keeps one (ours: `worker.web.database_pools.operator_max_connections`, default 2).
    public var operatorMaxConnections: Int
    /// `statement_timeout` / `lock_timeout` of every connection the pool opens (ours:
    /// `common.database.statement_timeout_ms`, `lock_timeout_ms`).
    public var sessionLimits: PostgresSessionLimits
    /// How `url` reaches the server (`PostgresRoute`): through a transaction pooler, statements are
    /// unnamed and `sessionLimits` are not sent (the role's settings apply).
    public var route: PostgresRoute = .direct

    public init(
        url: String, maxConnections: Int = 25, minConnections: Int = 5,
        acquireTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(300),
        maxLifetime: Duration = .seconds(1800), slowAcquireThreshold: Duration = .milliseconds(100),
        connectTimeout: Duration = .seconds(10), applicationName: String = "tasker-worker",
        maintenanceInterval: Duration = .seconds(5), operatorMaxConnections: Int = 2,
        sessionLimits: PostgresSessionLimits = .serverDefaults
    ) {
        self.url = url
        self.maxConnections = max(1, maxConnections)
        self.minConnections = min(max(0, minConnections), self.maxConnections)
        self.acquireTimeout = acquireTimeout
        self.idleTimeout = idleTimeout
        self.maxLifetime = maxLifetime
        self.slowAcquireThreshold = slowAcquireThreshold
        self.connectTimeout = connectTimeout
        self.applicationName = applicationName
        self.maintenanceInterval = maintenanceInterval
        self.operatorMaxConnections = min(max(1, operatorMaxConnections), max(1, self.maxConnections - 1))
        self.sessionLimits = sessionLimits
    }
}

/// A snapshot of pool activity, for health endpoints and metrics.
public struct PostgresPoolStatistics: Sendable, Equatable, Codable {
    /// Connections currently lent out (or being checked before they are).
    public var active: Int
    /// Open connections waiting in the pool.
    public var idle: Int
    public var max: Int
    public var min: Int
    /// Callers waiting for a connection right now.
    public var waiting: Int
    public var totalAcquires: Int
    /// Acquires that took longer than the slow-acquire threshold.
    public var slowAcquires: Int
    /// Acquires that failed (timeout, connect error, shutdown).
    public var acquireErrors: Int
    public var averageAcquireMs: Double
    public var maxAcquireMs: Double
    public var connectionsOpened: Int
    /// Connections found dead (or too old) and replaced.
    public var connectionsReplaced: Int
    /// The most connections open (or being opened) at once so far; never above `max`.
    public var peakConnections: Int = 0
    /// Connections the operator lane holds now (see `PostgresPoolLane`).
    public var operatorActive: Int = 0
    /// Acquires by the operator lane so far.
    public var operatorAcquires: Int = 0

    enum CodingKeys: String, CodingKey {
        case active, idle, max, min, waiting
        case totalAcquires = "total_acquires"
        case slowAcquires = "slow_acquires"
        case acquireErrors = "acquire_errors"
        case averageAcquireMs = "average_acquire_ms"
        case maxAcquireMs = "max_acquire_ms"
        case connectionsOpened = "connections_opened"
        case connectionsReplaced = "connections_replaced"
        case peakConnections = "peak_connections"
        case operatorActive = "operator_active"
        case operatorAcquires = "operator_acquires"
    }
}
