import TaskerStepModel

/// `[orchestration]`: what the companion orchestration (`tasker-dev orchestrate`) reads beyond
/// `[common]`. Upstream's `[orchestration.dlq]` and `[orchestration.web]` are modelled; the other tables
/// of upstream's orchestration context (event systems, gRPC, …) are accepted and ignored without a warning.
public struct OrchestrationConfiguration: Codable, Sendable, Equatable {
    /// `[orchestration.dlq]` (upstream TAS-49).
    public var dlq = DLQSettings()
    /// `[orchestration.web]`: the task REST API.
    public var web = Web()
    public init() {}
}

extension OrchestrationConfiguration {
    /// `[orchestration.web]`: the REST API (the task part of upstream's orchestration API), upstream's keys.
    public struct Web: Codable, Sendable, Equatable {
        /// Serve the API (default true).
        public var enabled = true
        /// `host:port` (upstream's default `0.0.0.0:8080`; port 0 picks a free port, logged at start).
        public var bindAddress = "0.0.0.0:8080"
        /// A request taking longer gets 408 `TIMEOUT` (100–300000).
        public var requestTimeoutMs = 30000
        /// Ours (as `worker.web`): at most this many open HTTP connections; beyond it new connections
        /// wait in the listen backlog until one closes (they are not accepted).
        public var maxConnections = 1000
        /// Ours: at most this many open HTTP connections from one client IP address (more are closed
        /// when accepted), so one client cannot fill `max_connections` alone; 0 = no limit.
        public var maxConnectionsPerAddress = 100
        /// Ours: a connection must deliver a complete request head within this many seconds of
        /// opening, or of its first byte after a response; else it is closed (slowloris).
        public var headerReadTimeoutSeconds = 30
        /// Ours: a keep-alive connection with no request in progress is closed after this many seconds.
        public var idleTimeoutSeconds = 75
        /// Ours (as `worker.web`): serve HTTPS only (`TLSListenerSettings`).
        public var tlsEnabled = false
        /// Ours: PEM certificate chain, when `tls_enabled`.
        public var tlsCertPath = ""
        /// Ours: PEM private key, when `tls_enabled`.
        public var tlsKeyPath = ""
        /// Ours: PEM CA certificates; set: clients must present a certificate signed by one (mutual TLS).
        public var tlsClientCaPath = ""
        /// Upstream's separate web pool (unused: the API reads through `common.database.pool`'s operator
        /// lane, at most `operator_max_connections` connections at once).
        public var databasePools: WorkerConfiguration.WebDatabasePools = {
            var pools = WorkerConfiguration.WebDatabasePools()
            pools.webApiPoolSize = 20
            pools.webApiMaxConnections = 30
            pools.maxTotalConnectionsHint = 50
            return pools
        }()
        /// `[orchestration.web.auth]`: the worker's keys and rules; upstream's orchestration defaults
        /// `jwt_issuer = "tasker-core"`, `jwt_audience = "tasker-api"`.
        public var auth: WorkerConfiguration.Auth = {
            var auth = WorkerConfiguration.Auth()
            auth.jwtIssuer = "tasker-core"
            auth.jwtAudience = "tasker-api"
            return auth
        }()
        public init() {}
    }
}

extension OrchestrationConfiguration {
    /// `[orchestration.dlq]`: the dead-letter investigations of stale tasks (`tasker.tasks_dlq`).
    public struct DLQSettings: Codable, Sendable, Equatable {
        /// The DLQ subsystem; when false no staleness detector runs (upstream documents this, its code
        /// only checks `staleness_detection.enabled`).
        public var enabled = true
        public var stalenessDetection = StalenessDetection()
        public init() {}
    }

    /// `[orchestration.dlq.staleness_detection]`: the periodic sweep of `detect_and_transition_stale_tasks`.
    public struct StalenessDetection: Codable, Sendable, Equatable {
        /// Run the detector (default true).
        public var enabled = true
        /// Seconds between sweeps (30–3600, default 300); the first sweep runs at start.
        public var detectionIntervalSeconds = 300
        /// Stale tasks handled per sweep at most (1–10000, default 100).
        public var batchSize = 100
        /// Only report what would be moved (default false).
        public var dryRun = false
        public var thresholds = Thresholds()
        public var actions = Actions()
        public init() {}
    }

    /// `[orchestration.dlq.staleness_detection.thresholds]`: minutes a task may stay in a state before
    /// it is stale; a template's `lifecycle.max_*_minutes` overrides them per template.
    public struct Thresholds: Codable, Sendable, Equatable {
        /// `waiting_for_dependencies` (1–1440, default 60).
        public var waitingForDependenciesMinutes = 60
        /// `waiting_for_retry` (1–1440, default 30).
        public var waitingForRetryMinutes = 30
        /// `steps_in_process` (1–1440, default 30).
        public var stepsInProcessMinutes = 30
        /// A task in one of those states older than this is stale whatever its time in the state
        /// (1–168, default 24).
        public var taskMaxLifetimeHours = 24
        public init() {}
    }

    /// `[orchestration.dlq.staleness_detection.actions]`: accepted for compatibility. Upstream's SQL always
    /// creates the DLQ entry and moves the task to `error` (and emits no event); so does this orchestration.
    public struct Actions: Codable, Sendable, Equatable {
        public var autoTransitionToError = true
        public var autoMoveToDlq = true
        public var emitEvents = true
        /// 1–255 characters (default `task_staleness_detected`).
        public var eventChannel = "task_staleness_detected"
        public init() {}
    }
}
