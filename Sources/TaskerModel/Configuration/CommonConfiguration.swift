import Foundation
import TaskerStepModel

// The `[common]` tree. Property names are the camelCase spellings of the TOML keys
// (`max_connections` ↔ `maxConnections`); the loader converts between the two, so no CodingKeys are needed.
// Every default below equals the value in config/tasker/base/common.toml (tasker-core's base defaults),
// so `TaskerConfiguration()` is the configuration a worker gets from the base files alone.

/// The whole effective configuration of a worker: `[common]` plus `[worker]`.
public struct TaskerConfiguration: Codable, Sendable, Equatable {
    /// Settings shared with the orchestration service.
    public var common = CommonConfiguration()
    /// Worker settings.
    public var worker = WorkerConfiguration()
    /// Companion orchestration settings (`[orchestration.dlq]`).
    public var orchestration = OrchestrationConfiguration()
    /// The built-in defaults (the base files with no environment variables set).
    public init() {}
}

/// `[common]`: database, queues, circuit breakers, channels, backoff, cache, templates.
public struct CommonConfiguration: Codable, Sendable, Equatable {
    public var system = SystemSettings()
    public var database = DatabaseSettings()
    public var pgmqDatabase = PgmqDatabaseSettings()
    public var queues = QueueSettings()
    public var circuitBreakers = CircuitBreakerSettings()
    public var mpscChannels = SharedChannelSettings()
    public var execution = ExecutionSettings()
    public var backoff = BackoffSettings()
    public var cache = CacheSettings()
    public var taskTemplates = TaskTemplateSettings()
    public init() {}

    /// The database the message queues live in: `pgmq_database.url` when set, else `database.url`.
    public var effectivePgmqDatabaseURL: String {
        pgmqDatabase.url.isEmpty ? database.url : pgmqDatabase.url
    }

    /// Whether the queues use a database of their own (a non-empty URL different from the main one).
    public var pgmqUsesSeparateDatabase: Bool {
        !pgmqDatabase.url.isEmpty && pgmqDatabase.url != database.url
    }
}

extension CommonConfiguration {
    /// `[common.system]`.
    public struct SystemSettings: Codable, Sendable, Equatable {
        public var defaultDependentSystem = "default"
        public init() {}
    }

    /// `[common.database]`.
    public struct DatabaseSettings: Codable, Sendable, Equatable {
        /// `postgres://` or `postgresql://` URL of the Tasker database.
        public var url = "postgresql://localhost/tasker"
        public var pool = PoolSettings()
        /// Ours: the session `statement_timeout` of every worker and orchestration connection
        /// (pooled, listener, dedicated), in ms; a statement running longer fails (57014).
        public var statementTimeoutMs = 30_000
        /// Ours: the session `lock_timeout` of every connection, in ms; a lock wait longer fails (55P03).
        public var lockTimeoutMs = 10_000
        /// Ours: the most a connection attempt waits (an unreachable or black-holed host included).
        public var connectTimeoutSeconds = 10
        /// Ours: `url` goes through a pooler in transaction mode (PgBouncer's `pool_mode =
        /// transaction`): statements are sent unnamed, no session settings are sent at connect (the
        /// role's or database's apply, checked at start), and LISTEN uses `listen_url` or nothing.
        public var transactionPooler = false
        /// Ours: a URL of the same database that reaches PostgreSQL directly, for the one LISTEN
        /// session. Empty: LISTEN goes through `url` when it is direct; behind a transaction pooler
        /// there is then no LISTEN and the worker reads its queues by polling.
        public var listenUrl = ""
        public init() {}

        /// Where the LISTEN session connects: `listen_url`, else `url` unless it goes through a
        /// transaction pooler (which cannot carry a LISTEN); nil = no LISTEN.
        public var listenSessionURL: String? {
            if !listenUrl.isEmpty { return listenUrl }
            return transactionPooler ? nil : url
        }
    }

    /// `[common.database.pool]` and `[common.pgmq_database.pool]`.
    public struct PoolSettings: Codable, Sendable, Equatable {
        public var maxConnections = 25
        /// Ours 1 (upstream 5): an idle worker holds one pooled session (docs/capacity.md).
        public var minConnections = 1
        public var acquireTimeoutSeconds = 10
        public var idleTimeoutSeconds = 300
        public var maxLifetimeSeconds = 1800
        public var slowAcquireThresholdMs = 100
        public init() {}
        /// A pool with explicit limits (other fields keep their defaults).
        public init(maxConnections: Int, minConnections: Int, acquireTimeoutSeconds: Int) {
            self.maxConnections = maxConnections
            self.minConnections = minConnections
            self.acquireTimeoutSeconds = acquireTimeoutSeconds
        }
    }

    /// `[common.pgmq_database]`: an optional separate database for the queues.
    public struct PgmqDatabaseSettings: Codable, Sendable, Equatable {
        /// Empty: the queues share `common.database`.
        public var url = ""
        public var enabled = true
        /// Ours `min_connections` 1 (upstream 3): an idle worker holds one queue session besides its LISTEN.
        public var pool = PoolSettings(maxConnections: 15, minConnections: 1, acquireTimeoutSeconds: 5)
        public init() {}
    }

    /// Messaging backends (`common.queues.backend`).
    public enum QueueBackend: String, Codable, Sendable, CaseIterable {
        case pgmq
        case rabbitmq
    }

    /// `[common.queues]`.
    public struct QueueSettings: Codable, Sendable, Equatable {
        public var backend = QueueBackend.pgmq
        public var orchestrationNamespace = "orchestration"
        public var workerNamespace = "worker"
        public var defaultVisibilityTimeoutSeconds = 30
        /// Contains `{namespace}` and `{name}`.
        public var namingPattern = "{namespace}_{name}_queue"
        public var orchestrationQueues = OrchestrationQueueNames()
        public var pgmq = PgmqSettings()
        public var rabbitmq = RabbitMQSettings()
        public init() {}

        /// The queue name for a namespace, e.g. `worker_payments_queue` for namespace `payments`
        /// with the default pattern and `worker_namespace`.
        public func queueName(namespace: String, name: String) -> String {
            namingPattern.replacingOccurrences(of: "{namespace}", with: namespace)
                .replacingOccurrences(of: "{name}", with: name)
        }
    }

    /// `[common.queues.orchestration_queues]`.
    public struct OrchestrationQueueNames: Codable, Sendable, Equatable {
        public var taskRequests = "orchestration_task_requests"
        public var taskFinalizations = "orchestration_task_finalizations"
        public var stepResults = "orchestration_step_results"
        public init() {}
    }

    /// `[common.queues.pgmq]`.
    public struct PgmqSettings: Codable, Sendable, Equatable {
        public var pollIntervalMs = 500
        public var queueDepthThresholds = QueueDepthThresholds()
        public init() {}
    }

    /// `[common.queues.pgmq.queue_depth_thresholds]`: soft back-pressure levels.
    public struct QueueDepthThresholds: Codable, Sendable, Equatable {
        public var criticalThreshold = 5000
        public var overflowThreshold = 10000
        public init() {}
    }

    /// `[common.queues.rabbitmq]` (read only when the backend is `rabbitmq`).
    public struct RabbitMQSettings: Codable, Sendable, Equatable {
        public var url = "amqp://guest:guest@localhost:5672/%2F"
        public var prefetchCount = 100
        public var heartbeatSeconds = 30
        public init() {}
    }

    /// `[common.circuit_breakers]`.
    public struct CircuitBreakerSettings: Codable, Sendable, Equatable {
        public var globalSettings = CircuitBreakerGlobalSettings()
        public var defaultConfig = CircuitBreakerDefaults()
        public var componentConfigs = CircuitBreakerComponents()
        public init() {}
    }

    /// `[common.circuit_breakers.global_settings]`.
    public struct CircuitBreakerGlobalSettings: Codable, Sendable, Equatable {
        public var metricsCollectionIntervalSeconds = 30
        public var minStateTransitionIntervalSeconds = 5.0
        public init() {}
    }

    /// `[common.circuit_breakers.default_config]`.
    public struct CircuitBreakerDefaults: Codable, Sendable, Equatable {
        public var failureThreshold = 5
        public var timeoutSeconds = 30
        public var successThreshold = 2
        public init() {}
    }

    /// `[common.circuit_breakers.component_configs]`.
    public struct CircuitBreakerComponents: Codable, Sendable, Equatable {
        public var taskReadiness = CircuitBreakerThresholds(failureThreshold: 10, successThreshold: 3)
        /// Also accepted under its old name `pgmq`.
        public var messaging = CircuitBreakerThresholds()
        public var web = CircuitBreakerThresholds()
        public var cache = CircuitBreakerThresholds()
        public init() {}
    }

    /// One component's circuit-breaker thresholds.
    public struct CircuitBreakerThresholds: Codable, Sendable, Equatable {
        public var failureThreshold = 5
        public var successThreshold = 2
        public init() {}
        public init(failureThreshold: Int, successThreshold: Int) {
            self.failureThreshold = failureThreshold
            self.successThreshold = successThreshold
        }
    }

    /// `[common.mpsc_channels]`.
    public struct SharedChannelSettings: Codable, Sendable, Equatable {
        public var eventPublisher = EventPublisherChannel()
        public var ffi = FFIChannel()
        public var overflowPolicy = OverflowPolicy()
        public init() {}
    }

    /// `[common.mpsc_channels.event_publisher]`.
    public struct EventPublisherChannel: Codable, Sendable, Equatable {
        public var eventQueueBufferSize = 5000
        public init() {}
    }

    /// `[common.mpsc_channels.ffi]`.
    public struct FFIChannel: Codable, Sendable, Equatable {
        public var rubyEventBufferSize = 1000
        public init() {}
    }

    /// `[common.mpsc_channels.overflow_policy]`.
    public struct OverflowPolicy: Codable, Sendable, Equatable {
        /// Fraction of capacity (0–1) at which a full-channel warning is logged.
        public var logWarningThreshold = 0.8
        public var metrics = OverflowMetrics()
        public init() {}
    }

    /// `[common.mpsc_channels.overflow_policy.metrics]`.
    public struct OverflowMetrics: Codable, Sendable, Equatable {
        public var saturationCheckIntervalSeconds = 30
        public init() {}
    }

    /// `[common.execution]`.
    public struct ExecutionSettings: Codable, Sendable, Equatable {
        public var stepEnqueueBatchSize = 50
        /// `test`, `development` or `production`.
        public var environment = "development"
        public init() {}
    }

    /// `[common.backoff]`: retry delays used when a step result carries none.
    public struct BackoffSettings: Codable, Sendable, Equatable {
        public var defaultBackoffSeconds = [1, 5, 15, 30, 60]
        public var maxBackoffSeconds = 3600
        public var backoffMultiplier = 2.0
        public var jitterEnabled = true
        public var jitterMaxPercentage = 0.15
        public init() {}
    }

    /// Cache backends (`common.cache.backend`).
    public enum CacheBackend: String, Codable, Sendable, CaseIterable {
        case redis
        case moka
        case memcached
    }

    /// `[common.cache]`.
    public struct CacheSettings: Codable, Sendable, Equatable {
        public var enabled = false
        public var backend = CacheBackend.redis
        public var defaultTtlSeconds = 3600
        public var templateTtlSeconds = 3600
        public var analyticsTtlSeconds = 60
        public var redis = RedisSettings()
        public var moka = MokaSettings()
        public var memcached = MemcachedSettings()
        public init() {}
    }

    /// `[common.cache.redis]`.
    public struct RedisSettings: Codable, Sendable, Equatable {
        public var url = "redis://localhost:6379"
        public var maxConnections = 10
        public var connectionTimeoutSeconds = 5
        public var database = 0
        public init() {}
    }

    /// `[common.cache.moka]` (in-process cache).
    public struct MokaSettings: Codable, Sendable, Equatable {
        public var maxCapacity = 10000
        public init() {}
    }

    /// `[common.cache.memcached]`.
    public struct MemcachedSettings: Codable, Sendable, Equatable {
        public var url = "tcp://localhost:11211"
        public var connectionTimeoutSeconds = 5
        public init() {}
    }

    /// `[common.task_templates]`.
    public struct TaskTemplateSettings: Codable, Sendable, Equatable {
        /// Glob patterns of task template YAML files.
        public var searchPaths = ["config/tasks/**/*.{yml,yaml}"]
        public init() {}
    }
}
