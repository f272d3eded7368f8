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
}
