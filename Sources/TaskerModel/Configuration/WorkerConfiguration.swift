import TaskerStepModel

// The `[worker]` tree. Defaults equal config/tasker/base/worker.toml (tasker-core's base defaults), plus
// tasker-core's serde defaults for keys the base file leaves out (`web.config_endpoint_enabled`,
// the JWKS/API-key fields of `web.auth`, `grpc.tls_cert_path`/`tls_key_path`), and ours, marked so.

/// `[worker]`: identity, event system, channels, HTTP and gRPC servers.
public struct WorkerConfiguration: Codable, Sendable, Equatable {
    public var workerId = "worker-default-001"
    public var workerType = "general"
    public var circuitBreakers = CircuitBreakers()
    public var eventSystems = EventSystems()
    public var mpscChannels = Channels()
    public var orchestrationClient = OrchestrationClient()
    public var web = Web()
    public var grpc = GRPC()
    /// Ours: `[worker.result_storage]`.
    public var resultStorage = ResultStorage()
    /// Ours: `[worker.crash_recovery]`.
    public var crashRecovery = CrashRecovery()
    /// Ours: `[worker.pgmq]`.
    public var pgmq = PGMQSettings()
    public init() {}
}

extension WorkerConfiguration {
    /// `[worker.circuit_breakers]` (used by FFI workers only).
    public struct CircuitBreakers: Codable, Sendable, Equatable {
        public var ffiCompletionSend = FFICompletionSend()
        public init() {}
    }

    /// `[worker.circuit_breakers.ffi_completion_send]`.
    public struct FFICompletionSend: Codable, Sendable, Equatable {
        public var failureThreshold = 5
        public var recoveryTimeoutSeconds = 5
        public var successThreshold = 2
        public var slowSendThresholdMs = 100
        public init() {}
    }

    /// How step messages reach the worker (`event_systems.worker.deployment_mode`).
    public enum DeploymentMode: String, Codable, Sendable, CaseIterable {
        /// LISTEN/NOTIFY plus the fallback poller.
        case hybrid = "Hybrid"
        /// LISTEN/NOTIFY only.
        case eventDrivenOnly = "EventDrivenOnly"
        /// Polling only.
        case pollingOnly = "PollingOnly"
        /// No message intake.
        case disabled = "Disabled"
    }

    /// `[worker.event_systems]`.
    public struct EventSystems: Codable, Sendable, Equatable {
        public var worker = EventSystem()
        public init() {}
    }

    /// `[worker.event_systems.worker]`.
    public struct EventSystem: Codable, Sendable, Equatable {
        public var systemId = "worker-event-system"
        public var deploymentMode = DeploymentMode.hybrid
        public var timing = Timing()
        public var processing = Processing()
        public var health = Health()
        public var metadata = Metadata()
        public init() {}
    }

    /// `[worker.event_systems.worker.timing]`.
    public struct Timing: Codable, Sendable, Equatable {
        public var healthCheckIntervalSeconds = 30
        public var fallbackPollingIntervalSeconds = 2
        /// Visibility timeout applied when reading step messages.
        public var visibilityTimeoutSeconds = 30
        public var processingTimeoutSeconds = 60
        public var claimTimeoutSeconds = 300
        public init() {}
    }

    /// `[worker.event_systems.worker.processing]`.
    public struct Processing: Codable, Sendable, Equatable {
        public var maxConcurrentOperations = 100
        public var batchSize = 20
        public var maxRetries = 3
        public var backoff = ProcessingBackoff()
        /// Ours: notified messages of a queue that arrive while a claim of that queue is in flight are
        /// read and claimed together after it (one round trip and one transaction for the burst).
        public var claimNotifiedBursts = true
        public init() {}
    }

    /// `[worker.event_systems.worker.processing.backoff]`.
    public struct ProcessingBackoff: Codable, Sendable, Equatable {
        public var initialDelayMs = 100
        public var maxDelayMs = 10000
        public var multiplier = 2.0
        public var jitterPercent = 0.1
        public init() {}
    }

    /// `[worker.event_systems.worker.health]`.
    public struct Health: Codable, Sendable, Equatable {
        public var enabled = true
        public var performanceMonitoringEnabled = true
        public var maxConsecutiveErrors = 10
        public var errorRateThresholdPerMinute = 20
        public init() {}
    }

    /// `[worker.event_systems.worker.metadata]`.
    public struct Metadata: Codable, Sendable, Equatable {
        public var inProcessEvents = InProcessEvents()
        public var listener = Listener()
        public var fallbackPoller = FallbackPoller()
        public init() {}
    }

    /// `[worker.event_systems.worker.metadata.in_process_events]`.
    public struct InProcessEvents: Codable, Sendable, Equatable {
        public var ffiIntegrationEnabled = true
        public var deduplicationCacheSize = 10000
        public init() {}
    }

    /// `[worker.event_systems.worker.metadata.listener]`: the LISTEN/NOTIFY connection.
    public struct Listener: Codable, Sendable, Equatable {
        public var retryIntervalSeconds = 5
        public var maxRetryAttempts = 5
        public var eventTimeoutSeconds = 60
        public var batchProcessing = true
        public var connectionTimeoutSeconds = 30
        public init() {}
    }

    /// `[worker.event_systems.worker.metadata.fallback_poller]`.
    public struct FallbackPoller: Codable, Sendable, Equatable {
        public var enabled = true
        public var pollingIntervalMs = 1000
        public var batchSize = 20
        /// Only messages older than this are picked up by the poller.
        public var ageThresholdSeconds = 5
        public var maxAgeHours = 24
        public var visibilityTimeoutSeconds = 30
        /// Empty: every namespace.
        public var supportedNamespaces: [String] = []
        public init() {}
    }

    /// `[worker.mpsc_channels]`: bounded-buffer sizes and handler dispatch.
    public struct Channels: Codable, Sendable, Equatable {
        public var commandProcessor = CommandProcessorChannel()
        public var eventSystems = EventSystemChannel()
        public var eventSubscribers = EventSubscriberChannels()
        public var inProcessEvents = InProcessEventChannel()
        public var eventListeners = EventListenerChannel()
        public var domainEvents = DomainEventChannel()
        public var handlerDispatch = HandlerDispatch()
        public var ffiDispatch = FFIDispatch()
        public init() {}
    }

    /// `[worker.mpsc_channels.command_processor]`.
    public struct CommandProcessorChannel: Codable, Sendable, Equatable {
        public var commandBufferSize = 2000
        public init() {}
    }

    /// `[worker.mpsc_channels.event_systems]`.
    public struct EventSystemChannel: Codable, Sendable, Equatable {
        public var eventChannelBufferSize = 2000
        public init() {}
    }

    /// `[worker.mpsc_channels.event_subscribers]`.
    public struct EventSubscriberChannels: Codable, Sendable, Equatable {
        public var completionBufferSize = 1000
        public var resultBufferSize = 1000
        public init() {}
    }

    /// `[worker.mpsc_channels.in_process_events]`.
    public struct InProcessEventChannel: Codable, Sendable, Equatable {
        public var broadcastBufferSize = 2000
        public var logSubscriberErrors = true
        public var dispatchTimeoutMs = 5000
        public init() {}
    }

    /// `[worker.mpsc_channels.event_listeners]`.
    public struct EventListenerChannel: Codable, Sendable, Equatable {
        public var pgmqEventBufferSize = 10000
        public init() {}
    }

    /// `[worker.mpsc_channels.domain_events]`.
    public struct DomainEventChannel: Codable, Sendable, Equatable {
        public var commandBufferSize = 1000
        public var shutdownDrainTimeoutMs = 5000
        public var logDroppedEvents = true
        public init() {}
    }

    /// `[worker.mpsc_channels.handler_dispatch]`: how many handlers run at once and for how long.
    public struct HandlerDispatch: Codable, Sendable, Equatable {
        public var dispatchBufferSize = 1000
        public var completionBufferSize = 1000
        public var maxConcurrentHandlers = 10
        public var handlerTimeoutMs = 30000
        public var loadShedding = LoadShedding()
        public init() {}
    }

    /// `[worker.mpsc_channels.handler_dispatch.load_shedding]`.
    public struct LoadShedding: Codable, Sendable, Equatable {
        public var enabled = true
        /// Percentage (0–100) of busy handler slots above which no new step is claimed.
        public var capacityThresholdPercent = 80.0
        /// Percentage (0–100) of busy handler slots above which a warning is logged.
        public var warningThresholdPercent = 70.0
        public init() {}
    }

    /// `[worker.mpsc_channels.ffi_dispatch]` (FFI workers only).
    public struct FFIDispatch: Codable, Sendable, Equatable {
        public var dispatchBufferSize = 1000
        public var completionTimeoutMs = 30000
        public var callbackTimeoutMs = 5000
        public var starvationWarningThresholdMs = 10000
        public var completionSendTimeoutMs = 10000
        public init() {}
    }

    /// `[worker.result_storage]` (ours): limits on storing step results.
    public struct ResultStorage: Codable, Sendable, Equatable {
        /// A result whose JSON is larger is not stored; the step gets a non-retryable
        /// `result_not_storable` error result instead (PostgreSQL's own `jsonb` limit is 256 MiB,
        /// and the result is written twice: `results` and the transition's metadata).
        public var maxResultBytes = 64 * 1024 * 1024
        /// A result still unstored (the database keeps failing transiently) this long after its
        /// handler returned makes readiness fail (`command_processor`) and shows in `/health/detailed`.
        public var unstoredAlertSeconds = 60
        public init() {}
    }

    /// `[worker.pgmq]` (ours): how the step path addresses PGMQ's queues.
    public struct PGMQSettings: Codable, Sendable, Equatable {
        /// `auto`: static SQL on the queue tables of every queue whose table layout is a known one
        /// (detected at boot), PGMQ's functions for the others; `functions`: PGMQ's functions always.
        public var statements = PGMQStatements.auto
        public init() {}
    }

    /// `worker.pgmq.statements`.
    public enum PGMQStatements: String, Codable, Sendable, CaseIterable {
        case auto
        case functions
    }

    /// `[worker.crash_recovery]` (ours): steps claimed by a worker that died are retried. Every
    /// worker keeps a liveness lease in PostgreSQL (`tasker.worker_leases`) while it runs (always,
    /// so that others never take its steps); with `enabled`, it also looks for `in_progress` steps
    /// whose claiming worker has no unexpired lease and stores a retryable `worker_lost` error
    /// result for each.
    public struct CrashRecovery: Codable, Sendable, Equatable {
        /// Look for steps of dead workers (the lease is kept either way).
        public var enabled = true
        /// How often to look.
        public var scanIntervalMs = 2000
        /// How long a worker must be absent before its steps are recovered: its lease lasts two
        /// thirds of this from each renewal (renewed every sixth), and scanners wait the last third
        /// after seeing it expired.
        public var gracePeriodMs = 4000
        /// `/health/detailed` counts steps `in_progress` for longer than this, by claiming worker.
        public var staleInProgressThresholdSeconds = 300
        public init() {}
    }

    /// `[worker.web]`: the REST API.
    public struct Web: Codable, Sendable, Equatable {
        public var enabled = true
        /// `host:port`.
        public var bindAddress = "0.0.0.0:8081"
        public var requestTimeoutMs = 30000
        /// Serve `GET /config` (secrets redacted).
        public var configEndpointEnabled = false
        /// Ours: at most this many open HTTP connections; beyond it new connections wait in the
        /// listen backlog until one closes (they are not accepted).
        public var maxConnections = 1000
        /// Ours: at most this many open HTTP connections from one client IP address (more are closed
        /// when accepted), so one client cannot fill `max_connections` alone; 0 = no limit.
        public var maxConnectionsPerAddress = 100
        /// Ours: a connection must deliver a complete request head (request line and headers)
        /// within this many seconds of opening, or of its first byte after a response; else it is closed.
        public var headerReadTimeoutSeconds = 30
        /// Ours: a keep-alive connection with no request in progress is closed after this many seconds.
        public var idleTimeoutSeconds = 75
        /// Ours: serve HTTPS only (`TLSListenerSettings`).
        public var tlsEnabled = false
        /// Ours: PEM certificate chain, when `tls_enabled`.
        public var tlsCertPath = ""
        /// Ours: PEM private key, when `tls_enabled`.
        public var tlsKeyPath = ""
        /// Ours: PEM CA certificates; set: clients must present a certificate signed by one (mutual TLS).
        public var tlsClientCaPath = ""
        public var databasePools = WebDatabasePools()
        public var auth = Auth()
        public init() {}
    }

    /// `[worker.web.database_pools]`.
    public struct WebDatabasePools: Codable, Sendable, Equatable {
        public var webApiPoolSize = 10
        public var webApiMaxConnections = 15
        public var webApiConnectionTimeoutSeconds = 30
        public var webApiIdleTimeoutSeconds = 600
        public var maxTotalConnectionsHint = 25
        /// Ours: the most connections of `common.database.pool` the operator surface (REST and gRPC
        /// health, template and metrics queries) holds at once, inside `max_connections` (at most
        /// `max_connections - 1`). The `web_api_*` keys above are upstream's separate web pool, unused.
        public var operatorMaxConnections = 2
        public init() {}
    }

    /// `[worker.web.auth]`.
    public struct Auth: Codable, Sendable, Equatable {
        public var enabled = false
        public var jwtIssuer = "tasker-worker"
        public var jwtAudience = "worker-api"
        public var jwtTokenExpiryHours = 24
        /// Ours: the longest lifetime (`exp - iat`, or `exp - now` without `iat`) a bearer token may
        /// have, in seconds; 0 = no limit. Default 604800 (168 h, the longest `jwt_token_expiry_hours`).
        public var jwtMaxTokenLifetimeSeconds = 604_800
        public var jwtPrivateKey = ""
        public var jwtPublicKey = ""
        public var jwtPublicKeyPath = ""
        /// `public_key` or `jwks`.
        public var jwtVerificationMethod = "public_key"
        public var jwksUrl = ""
        public var jwksRefreshIntervalSeconds = 3600
        public var jwksMaxStaleSeconds = 300
        public var jwksUrlAllowHttp = false
        public var jwtAllowedAlgorithms = ["RS256"]
        public var permissionsClaim = "permissions"
        public var strictValidation = true
        public var logUnknownPermissions = true
        public var apiKey = ""
        public var apiKeyHeader = "X-API-Key"
        public var apiKeysEnabled = false
        public var apiKeys: [APIKey] = []
        public init() {}
    }

    /// One `[[worker.web.auth.api_keys]]` entry.
    public struct APIKey: Codable, Sendable, Equatable {
        public var key = ""
        public var permissions: [String] = []
        public var description = ""
        public init() {}
        public init(key: String, permissions: [String], description: String = "") {
            self.key = key
            self.permissions = permissions
            self.description = description
        }
    }

    /// `[worker.grpc]`.
    public struct GRPC: Codable, Sendable, Equatable {
        public var enabled = true
        /// `host:port`.
        public var bindAddress = "0.0.0.0:9191"
        /// Serve TLS only (upstream accepts the key and ignores it; applied here: `TLSListenerSettings`).
        public var tlsEnabled = false
        /// PEM certificate chain, when `tls_enabled`.
        public var tlsCertPath = ""
        /// PEM private key, when `tls_enabled`.
        public var tlsKeyPath = ""
        /// Ours: PEM CA certificates; set: clients must present a certificate signed by one (mutual TLS).
        public var tlsClientCaPath = ""
        /// Ours: a connection whose TLS handshake is not complete this many seconds after it opened is closed.
        public var tlsHandshakeTimeoutSeconds = 10
        public var keepaliveIntervalSeconds = 30
        public var keepaliveTimeoutSeconds = 20
        public var maxConcurrentStreams = 1000
        public var maxFrameSize = 16384
        /// Ours: at most this many open HTTP/2 connections; beyond it new connections wait in the
        /// listen backlog until one closes (they are not accepted).
        public var maxConnections = 1000
        /// Ours: at most this many open HTTP/2 connections from one client IP address (more are
        /// closed when accepted); 0 = no limit.
        public var maxConnectionsPerAddress = 100
        /// Ours: a connection without an RPC for this many seconds is closed (GOAWAY).
        public var idleTimeoutSeconds = 120
        /// Ours: a connection is closed gracefully (GOAWAY) after this many seconds; 0 = no limit.
        public var maxConnectionAgeSeconds = 0
        /// Ours: RPCs still running this many seconds after a connection's GOAWAY are cut off.
        public var maxConnectionAgeGraceSeconds = 30
        public var enableReflection = true
        public var enableHealthService = true
        public init() {}
    }
}
