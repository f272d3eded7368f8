import TaskerModel
import TaskerPostgres

extension PostgresPoolConfiguration {
    /// A pool configuration from `common.database.pool` (upstream key names and defaults).
    public init(
        url: String, settings: CommonConfiguration.PoolSettings, applicationName: String = "tasker-worker",
        operatorMaxConnections: Int = 2
    ) {
        self.init(
            url: url, maxConnections: settings.maxConnections, minConnections: settings.minConnections,
            acquireTimeout: .seconds(settings.acquireTimeoutSeconds),
            idleTimeout: .seconds(settings.idleTimeoutSeconds),
            maxLifetime: .seconds(settings.maxLifetimeSeconds),
            slowAcquireThreshold: .milliseconds(settings.slowAcquireThresholdMs),
            applicationName: applicationName, operatorMaxConnections: operatorMaxConnections)
    }

    /// A pool of the database `database` describes: its URL, `pool` settings, session limits
    /// (`statement_timeout_ms`, `lock_timeout_ms`), `connect_timeout_seconds` and route
    /// (`transaction_pooler`).
    public init(
        database: CommonConfiguration.DatabaseSettings, applicationName: String = "tasker-worker",
        operatorMaxConnections: Int = 2
    ) {
        self.init(
            url: database.url, settings: database.pool, applicationName: applicationName,
            operatorMaxConnections: operatorMaxConnections)
        self.connectTimeout = database.connectTimeout
        self.sessionLimits = database.sessionLimits
        self.route = database.route
    }
}

extension CommonConfiguration.DatabaseSettings {
    /// `statement_timeout_ms` and `lock_timeout_ms` as the limits every session starts with.
    public var sessionLimits: PostgresSessionLimits {
        PostgresSessionLimits(statementTimeout: .milliseconds(statementTimeoutMs), lockTimeout: .milliseconds(lockTimeoutMs))
    }

    /// How `url` reaches the server: `transaction_pooler`.
    public var route: PostgresRoute { transactionPooler ? .transactionPooler : .direct }

    /// `connect_timeout_seconds`.
    public var connectTimeout: Duration { .seconds(connectTimeoutSeconds) }
}

extension CommonConfiguration {
    /// The pool of the queues' own database (`[common.pgmq_database]`: its URL and `pool`), or nil
    /// when the queues share `[common.database]` (`pgmqUsesSeparateDatabase`). Its sessions get the
    /// main database's `statement_timeout_ms`, `lock_timeout_ms` and `connect_timeout_seconds`; it
    /// is reached directly (`transaction_pooler` and `listen_url` describe the main database only:
    /// the queue database carries the LISTEN session).
    public func queueDatabasePool(applicationName: String) -> PostgresPoolConfiguration? {
        guard pgmqUsesSeparateDatabase else { return nil }
        var configuration = PostgresPoolConfiguration(
            url: pgmqDatabase.url, settings: pgmqDatabase.pool, applicationName: applicationName, operatorMaxConnections: 1)
        configuration.connectTimeout = database.connectTimeout
        configuration.sessionLimits = database.sessionLimits
        return configuration
    }
}
