import Foundation
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

// The health bodies of the worker's REST API (upstream `schemas/generated/worker-openapi.json`),
// shared with the gRPC `WorkerHealthService`. Encoded with `APIJSON.encoder`: snake_case keys as
// upstream, timestamps as chrono writes them, and explicit `null` for absent optionals.

/// The verdict of one check: `healthy`, `degraded` or `unhealthy`.
package enum HealthStatus: String, Codable, Sendable, Equatable, Comparable {
    case healthy, degraded, unhealthy

    /// Ordered from best to worst, so that `max` of several verdicts is the worst.
    package static func < (lhs: HealthStatus, rhs: HealthStatus) -> Bool { lhs.rank < rhs.rank }

    private var rank: Int {
        switch self {
        case .healthy: 0
        case .degraded: 1
        case .unhealthy: 2
        }
    }
}

/// One check (`HealthCheck`): its verdict, why, how long it took and when it ran.
package struct HealthCheck: Codable, Sendable, Equatable {
    /// `healthy`, `degraded` or `unhealthy`.
    package var status: String
    package var message: String?
    /// How long the check took.
    var durationMs: Int
    var lastChecked: Date
    /// The check gave no answer within its deadline (not part of the body): a slow answer, which
    /// may be a loaded machine rather than a fault (`HealthProbeCache.settle`).
    package var timedOut = false

    package init(status: HealthStatus, message: String?, durationMs: Int, lastChecked: Date = Date()) {
        self.status = status.rawValue
        self.message = message
        self.durationMs = durationMs
        self.lastChecked = lastChecked
    }

    /// An unhealthy check that got no answer within its deadline.
    package static func timedOut(_ message: String, durationMs: Int) -> HealthCheck {
        var check = HealthCheck(status: .unhealthy, message: message, durationMs: durationMs)
        check.timedOut = true
        return check
    }

    /// The verdict as an enum (an unknown string counts as `unhealthy`).
    package var verdict: HealthStatus { HealthStatus(rawValue: status) ?? .unhealthy }

    enum CodingKeys: String, CodingKey {
        case status, message
        case durationMs = "duration_ms"
        case lastChecked = "last_checked"
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(status, forKey: .status)
        try c.encode(message, forKey: .message)
        try c.encode(durationMs, forKey: .durationMs)
        try c.encode(lastChecked, forKey: .lastChecked)
    }
}

/// `GET /health` and `GET /health/live` (`BasicHealthResponse`).
package struct BasicHealthResponse: Codable, Sendable, Equatable {
    /// `healthy` (`/health`) or `alive` (`/health/live`).
    package var status: String
    package var timestamp: Date
    /// The public id, `worker-<uuid>`.
    package var workerID: String

    package init(status: String, timestamp: Date = Date(), workerID: String) {
        self.status = status
        self.timestamp = timestamp
        self.workerID = workerID
    }

    enum CodingKeys: String, CodingKey {
        case status, timestamp
        case workerID = "worker_id"
    }
}

/// The checks of `GET /health/ready` (`WorkerReadinessChecks`).
package struct WorkerReadinessChecks: Codable, Sendable, Equatable {
    package var database: HealthCheck
    package var commandProcessor: HealthCheck
    var queueProcessing: HealthCheck

    package init(database: HealthCheck, commandProcessor: HealthCheck, queueProcessing: HealthCheck) {
        self.database = database
        self.commandProcessor = commandProcessor
        self.queueProcessing = queueProcessing
    }

    /// Ready iff every check is exactly `healthy`.
    var allHealthy: Bool { [database, commandProcessor, queueProcessing].allSatisfy { $0.verdict == .healthy } }

    enum CodingKeys: String, CodingKey {
        case database
        case commandProcessor = "command_processor"
        case queueProcessing = "queue_processing"
    }
}

/// `GET /health/ready` (`ReadinessResponse`); served with 200 when ready, else 503 with an `ErrorResponse`.
package struct ReadinessResponse: Codable, Sendable, Equatable {
    /// `ready` or `not_ready`.
    package var status: String
    package var timestamp: Date
    package var workerID: String
    package var checks: WorkerReadinessChecks
    var systemInfo: WorkerSystemInfo

    package init(status: String, timestamp: Date, workerID: String, checks: WorkerReadinessChecks, systemInfo: WorkerSystemInfo) {
        self.status = status
        self.timestamp = timestamp
        self.workerID = workerID
        self.checks = checks
        self.systemInfo = systemInfo
    }

    /// Whether the worker is ready to process steps (every readiness check healthy).
    var isReady: Bool { checks.allHealthy }

    enum CodingKeys: String, CodingKey {
        case status, timestamp, checks
        case workerID = "worker_id"
        case systemInfo = "system_info"
    }
}

/// The checks of `GET /health/detailed` (`WorkerDetailedChecks`).
package struct WorkerDetailedChecks: Codable, Sendable, Equatable {
    package var database: HealthCheck
    package var commandProcessor: HealthCheck
    var queueProcessing: HealthCheck
    package var eventSystem: HealthCheck
    var stepProcessing: HealthCheck
    package var circuitBreakers: HealthCheck

    package init(
        database: HealthCheck, commandProcessor: HealthCheck, queueProcessing: HealthCheck,
        eventSystem: HealthCheck, stepProcessing: HealthCheck, circuitBreakers: HealthCheck
    ) {
        self.database = database
        self.commandProcessor = commandProcessor
        self.queueProcessing = queueProcessing
        self.eventSystem = eventSystem
        self.stepProcessing = stepProcessing
        self.circuitBreakers = circuitBreakers
    }

    /// Every check in schema order.
    package var all: [HealthCheck] {
        [database, commandProcessor, queueProcessing, eventSystem, stepProcessing, circuitBreakers]
    }

    enum CodingKeys: String, CodingKey {
        case database
        case commandProcessor = "command_processor"
        case queueProcessing = "queue_processing"
        case eventSystem = "event_system"
        case stepProcessing = "step_processing"
        case circuitBreakers = "circuit_breakers"
    }
}

/// `GET /health/detailed` (`DetailedHealthResponse`); always 200.
package struct DetailedHealthResponse: Codable, Sendable, Equatable {
    /// `healthy` when all six checks are, else `degraded`.
    package var status: String
    package var timestamp: Date
    package var workerID: String
    package var checks: WorkerDetailedChecks
    var systemInfo: WorkerSystemInfo
    var distributedCache: DistributedCacheInfo?
    /// Ours: liveness and crash recovery, long-running `in_progress` steps by worker.
    var stepRecovery: StepRecoveryHealth?

    package init(
        status: String, timestamp: Date, workerID: String, checks: WorkerDetailedChecks,
        systemInfo: WorkerSystemInfo, distributedCache: DistributedCacheInfo?, stepRecovery: StepRecoveryHealth? = nil
    ) {
        self.stepRecovery = stepRecovery
        self.status = status
        self.timestamp = timestamp
        self.workerID = workerID
        self.checks = checks
        self.systemInfo = systemInfo
        self.distributedCache = distributedCache
    }

    enum CodingKeys: String, CodingKey {
        case status, timestamp, checks
        case workerID = "worker_id"
        case systemInfo = "system_info"
        case distributedCache = "distributed_cache"
        case stepRecovery = "step_recovery"
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(status, forKey: .status)
        try c.encode(timestamp, forKey: .timestamp)
        try c.encode(workerID, forKey: .workerID)
        try c.encode(checks, forKey: .checks)
        try c.encode(systemInfo, forKey: .systemInfo)
        try c.encode(distributedCache, forKey: .distributedCache)
        try c.encodeIfPresent(stepRecovery, forKey: .stepRecovery)
    }
}

/// `system_info` of the readiness and detailed bodies (`WorkerSystemInfo`).
package struct WorkerSystemInfo: Codable, Sendable, Equatable {
    package var version: String
    package var environment: String
    var uptimeSeconds: Int
    /// `command_processor`, as upstream.
    package var workerType: String
    /// Open connections of the pool (lent plus idle).
    var databasePoolSize: Int
    /// The pipeline runs and takes steps.
    var commandProcessorActive: Bool
    package var supportedNamespaces: [String]
    var poolUtilization: PoolUtilizationInfo?

    package init(
        version: String, environment: String, uptimeSeconds: Int, workerType: String, databasePoolSize: Int,
        commandProcessorActive: Bool, supportedNamespaces: [String], poolUtilization: PoolUtilizationInfo?
    ) {
        self.version = version
        self.environment = environment
        self.uptimeSeconds = uptimeSeconds
        self.workerType = workerType
        self.databasePoolSize = databasePoolSize
        self.commandProcessorActive = commandProcessorActive
        self.supportedNamespaces = supportedNamespaces
        self.poolUtilization = poolUtilization
    }

    enum CodingKeys: String, CodingKey {
        case version, environment
        case uptimeSeconds = "uptime_seconds"
        case workerType = "worker_type"
        case databasePoolSize = "database_pool_size"
        case commandProcessorActive = "command_processor_active"
        case supportedNamespaces = "supported_namespaces"
        case poolUtilization = "pool_utilization"
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(version, forKey: .version)
        try c.encode(environment, forKey: .environment)
        try c.encode(uptimeSeconds, forKey: .uptimeSeconds)
        try c.encode(workerType, forKey: .workerType)
        try c.encode(databasePoolSize, forKey: .databasePoolSize)
        try c.encode(commandProcessorActive, forKey: .commandProcessorActive)
        try c.encode(supportedNamespaces, forKey: .supportedNamespaces)
        try c.encode(poolUtilization, forKey: .poolUtilization)
    }
}

/// Connection pool figures (`PoolUtilizationInfo`). With one database the worker reaches the Tasker
/// tables and PGMQ through one pool, and both entries describe it; with the queues in a database of
/// their own (`[common.pgmq_database]`), `pgmq_pool` is that database's pool.
package struct PoolUtilizationInfo: Codable, Sendable, Equatable {
    var taskerPool: PoolDetail
    var pgmqPool: PoolDetail

    package init(taskerPool: PoolDetail, pgmqPool: PoolDetail) {
        self.taskerPool = taskerPool
        self.pgmqPool = pgmqPool
    }

    enum CodingKeys: String, CodingKey {
        case taskerPool = "tasker_pool"
        case pgmqPool = "pgmq_pool"
    }
}

/// One pool's figures (`PoolDetail`).
package struct PoolDetail: Codable, Sendable, Equatable {
    var activeConnections: Int
    var idleConnections: Int
    package var maxConnections: Int
    /// Lent connections as a percentage of the maximum.
    var utilizationPercent: Double
    package var totalAcquires: Int
    package var slowAcquires: Int
    package var acquireErrors: Int
    var averageAcquireTimeMs: Double
    var maxAcquireTimeMs: Double

    /// The figures of `PostgresConnectionPool.statistics`.
    package init(_ statistics: PostgresPoolStatistics) {
        activeConnections = statistics.active
        idleConnections = statistics.idle
        maxConnections = statistics.max
        utilizationPercent = statistics.max > 0 ? Double(statistics.active) / Double(statistics.max) * 100 : 0
        totalAcquires = statistics.totalAcquires
        slowAcquires = statistics.slowAcquires
        acquireErrors = statistics.acquireErrors
        averageAcquireTimeMs = statistics.averageAcquireMs
        maxAcquireTimeMs = statistics.maxAcquireMs
    }

    enum CodingKeys: String, CodingKey {
        case activeConnections = "active_connections"
        case idleConnections = "idle_connections"
        case maxConnections = "max_connections"
        case utilizationPercent = "utilization_percent"
        case totalAcquires = "total_acquires"
        case slowAcquires = "slow_acquires"
        case acquireErrors = "acquire_errors"
        case averageAcquireTimeMs = "average_acquire_time_ms"
        case maxAcquireTimeMs = "max_acquire_time_ms"
    }

    /// The `f64` fields as floats (`4.0`), as upstream writes them.
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(activeConnections, forKey: .activeConnections)
        try c.encode(idleConnections, forKey: .idleConnections)
        try c.encode(maxConnections, forKey: .maxConnections)
        try c.encode(JSONFloat(utilizationPercent), forKey: .utilizationPercent)
        try c.encode(totalAcquires, forKey: .totalAcquires)
        try c.encode(slowAcquires, forKey: .slowAcquires)
        try c.encode(acquireErrors, forKey: .acquireErrors)
        try c.encode(JSONFloat(averageAcquireTimeMs), forKey: .averageAcquireTimeMs)
        try c.encode(JSONFloat(maxAcquireTimeMs), forKey: .maxAcquireTimeMs)
    }
}

/// The distributed template cache (`DistributedCacheInfo`). This worker has none: it reports
/// `enabled: false`, provider `noop`, healthy (not applicable), as upstream does without one.
package struct DistributedCacheInfo: Codable, Sendable, Equatable {
    package var enabled: Bool
    /// `redis` or `noop`.
    package var provider: String
    package var healthy: Bool

    package init(enabled: Bool, provider: String, healthy: Bool) {
        self.enabled = enabled
        self.provider = provider
        self.healthy = healthy
    }

    /// No distributed cache.
    package static let none = DistributedCacheInfo(enabled: false, provider: "noop", healthy: true)
}
