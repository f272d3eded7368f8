import TaskerStepModel

/// What each configuration key may hold, beyond its type (which comes from the defaults).
///
/// Ranges are tasker-core's enforced `#[validate(range(...))]` bounds from
/// `crates/tasker-shared/src/config/tasker.rs`. Keys that struct does not validate (or no longer has) use
/// the `valid_range` documented for them in tasker-core's `config/tasker/base/*.toml`; they are marked
/// `// doc`. Where neither exists the bound is ours, marked `// ours`.
enum ConfigurationSchema {
    /// A constraint on one key.
    enum Rule: Sendable {
        case integer(ClosedRange<Int>)
        case number(ClosedRange<Double>)
        case nonEmpty
        case oneOf([String])
        case postgresURL(allowEmpty: Bool)
        case urlScheme([String])
        /// `amqp://` that `AMQPConfiguration(url:)` accepts, or `amqps://` (upstream's; refused when the
        /// worker connects: the client has no TLS).
        case amqpURL
        case bindAddress
        case containsAll([String])
        case count(ClosedRange<Int>)
    }

    /// `[]` in a path stands for every element of an array.
    static let rules: [(path: String, rule: Rule)] =
        commonRules + workerRules + orchestrationRules + enumerations.keys.sorted().map { ($0, .oneOf(enumerations[$0]!)) }

    static let commonRules: [(path: String, rule: Rule)] = {
        var r: [(path: String, rule: Rule)] = [
            ("common.system.default_dependent_system", .nonEmpty),
            ("common.database.url", .postgresURL(allowEmpty: false)),
            ("common.pgmq_database.url", .postgresURL(allowEmpty: true)),
            ("common.database.statement_timeout_ms", .integer(100...3_600_000)),  // ours
            ("common.database.lock_timeout_ms", .integer(100...3_600_000)),  // ours
            ("common.database.connect_timeout_seconds", .integer(1...300)),  // ours
            ("common.database.listen_url", .postgresURL(allowEmpty: true)),  // ours
        ]
        for pool in ["common.database.pool", "common.pgmq_database.pool"] {
            r += [
                ("\(pool).max_connections", .integer(1...1000)),
                ("\(pool).min_connections", .integer(0...100)),
                ("\(pool).acquire_timeout_seconds", .integer(1...300)),
                ("\(pool).idle_timeout_seconds", .integer(1...3600)),
                ("\(pool).max_lifetime_seconds", .integer(60...86400)),
                ("\(pool).slow_acquire_threshold_ms", .integer(10...60000)),
            ]
        }
        r += [
            ("common.queues.orchestration_namespace", .nonEmpty),
            ("common.queues.worker_namespace", .nonEmpty),
            ("common.queues.default_visibility_timeout_seconds", .integer(1...3600)),
            ("common.queues.naming_pattern", .containsAll(["{namespace}", "{name}"])),
            ("common.queues.orchestration_queues.task_requests", .nonEmpty),
            ("common.queues.orchestration_queues.task_finalizations", .nonEmpty),
            ("common.queues.orchestration_queues.step_results", .nonEmpty),
            ("common.queues.pgmq.poll_interval_ms", .integer(10...10000)),
            ("common.queues.pgmq.queue_depth_thresholds.critical_threshold", .integer(1...Int.max)),
            ("common.queues.pgmq.queue_depth_thresholds.overflow_threshold", .integer(1...Int.max)),
            ("common.queues.rabbitmq.url", .amqpURL),
            ("common.queues.rabbitmq.prefetch_count", .integer(1...65535)),
            ("common.queues.rabbitmq.heartbeat_seconds", .integer(0...3600)),
            ("common.circuit_breakers.global_settings.metrics_collection_interval_seconds", .integer(1...3600)),
            ("common.circuit_breakers.global_settings.min_state_transition_interval_seconds", .number(0.1...60.0)),
            ("common.circuit_breakers.default_config.failure_threshold", .integer(1...100)),
            ("common.circuit_breakers.default_config.timeout_seconds", .integer(1...300)),
            ("common.circuit_breakers.default_config.success_threshold", .integer(1...100)),
        ]
        for component in ["task_readiness", "messaging", "web", "cache"] {
            r += [
                ("common.circuit_breakers.component_configs.\(component).failure_threshold", .integer(1...100)),
                ("common.circuit_breakers.component_configs.\(component).success_threshold", .integer(1...100)),
            ]
        }
        r += [
            ("common.mpsc_channels.event_publisher.event_queue_buffer_size", .integer(100...1_000_000)),
            ("common.mpsc_channels.ffi.ruby_event_buffer_size", .integer(100...100_000)),
            ("common.mpsc_channels.overflow_policy.log_warning_threshold", .number(0.0...1.0)),
            ("common.mpsc_channels.overflow_policy.metrics.saturation_check_interval_seconds", .integer(1...3600)),
            ("common.execution.step_enqueue_batch_size", .integer(1...1000)),
            ("common.execution.environment", .oneOf(["test", "development", "production"])),  // doc
            ("common.backoff.default_backoff_seconds", .count(1...20)),
            ("common.backoff.default_backoff_seconds[]", .integer(1...3600)),  // doc says "positive"; cap ours
            ("common.backoff.max_backoff_seconds", .integer(1...3600)),
            ("common.backoff.backoff_multiplier", .number(1.0...10.0)),
            ("common.backoff.jitter_max_percentage", .number(0.0...1.0)),
            ("common.cache.default_ttl_seconds", .integer(1...86400)),
            ("common.cache.template_ttl_seconds", .integer(1...86400)),
            ("common.cache.analytics_ttl_seconds", .integer(1...86400)),
            ("common.cache.redis.url", .urlScheme(["redis", "rediss", "unix"])),  // ours
            ("common.cache.redis.max_connections", .integer(1...100)),
            ("common.cache.redis.connection_timeout_seconds", .integer(1...60)),
            ("common.cache.redis.database", .integer(0...15)),
            ("common.cache.moka.max_capacity", .integer(1...1_000_000)),
            ("common.cache.memcached.url", .urlScheme(["tcp", "unix"])),  // ours
            ("common.cache.memcached.connection_timeout_seconds", .integer(1...60)),
            ("common.task_templates.search_paths", .count(1...Int.max)),
            ("common.task_templates.search_paths[]", .nonEmpty),
        ]
        return r
    }()

    static let workerRules: [(path: String, rule: Rule)] = {
        let es = "worker.event_systems.worker"
        let ch = "worker.mpsc_channels"
        return [
            ("worker.worker_id", .nonEmpty),
            ("worker.worker_type", .nonEmpty),
            ("worker.circuit_breakers.ffi_completion_send.failure_threshold", .integer(1...100)),
            ("worker.circuit_breakers.ffi_completion_send.recovery_timeout_seconds", .integer(1...300)),
            ("worker.circuit_breakers.ffi_completion_send.success_threshold", .integer(1...100)),
            ("worker.circuit_breakers.ffi_completion_send.slow_send_threshold_ms", .integer(10...10000)),
            ("\(es).system_id", .nonEmpty),
            ("\(es).timing.health_check_interval_seconds", .integer(1...3600)),
            ("\(es).timing.fallback_polling_interval_seconds", .integer(1...300)),
            ("\(es).timing.visibility_timeout_seconds", .integer(1...3600)),
            ("\(es).timing.processing_timeout_seconds", .integer(1...3600)),
            ("\(es).timing.claim_timeout_seconds", .integer(1...3600)),
            ("\(es).processing.max_concurrent_operations", .integer(1...10000)),
            ("\(es).processing.batch_size", .integer(1...1000)),
            ("\(es).processing.max_retries", .integer(0...100)),
            ("\(es).processing.backoff.initial_delay_ms", .integer(10...60000)),  // doc
            ("\(es).processing.backoff.max_delay_ms", .integer(100...300_000)),  // doc
            ("\(es).processing.backoff.multiplier", .number(1.0...10.0)),  // doc
            ("\(es).processing.backoff.jitter_percent", .number(0.0...1.0)),  // doc
            ("\(es).health.max_consecutive_errors", .integer(1...1000)),
            ("\(es).health.error_rate_threshold_per_minute", .integer(1...10000)),
            ("\(es).metadata.in_process_events.deduplication_cache_size", .integer(100...100_000)),
            ("\(es).metadata.listener.retry_interval_seconds", .integer(1...300)),
            ("\(es).metadata.listener.max_retry_attempts", .integer(0...100)),
            ("\(es).metadata.listener.event_timeout_seconds", .integer(1...3600)),
            ("\(es).metadata.listener.connection_timeout_seconds", .integer(1...300)),
            ("\(es).metadata.fallback_poller.polling_interval_ms", .integer(10...60000)),
            ("\(es).metadata.fallback_poller.batch_size", .integer(1...1000)),
            ("\(es).metadata.fallback_poller.age_threshold_seconds", .integer(1...3600)),
            ("\(es).metadata.fallback_poller.max_age_hours", .integer(1...168)),
            ("\(es).metadata.fallback_poller.visibility_timeout_seconds", .integer(1...3600)),
            ("\(es).metadata.fallback_poller.supported_namespaces[]", .nonEmpty),  // ours
            ("\(ch).command_processor.command_buffer_size", .integer(10...1_000_000)),
            ("\(ch).event_systems.event_channel_buffer_size", .integer(10...1_000_000)),
            ("\(ch).event_subscribers.completion_buffer_size", .integer(10...1_000_000)),
            ("\(ch).event_subscribers.result_buffer_size", .integer(10...1_000_000)),
            ("\(ch).in_process_events.broadcast_buffer_size", .integer(100...1_000_000)),
            ("\(ch).in_process_events.dispatch_timeout_ms", .integer(100...60000)),
            ("\(ch).event_listeners.pgmq_event_buffer_size", .integer(10...1_000_000)),
            ("\(ch).domain_events.command_buffer_size", .integer(10...1_000_000)),
            ("\(ch).domain_events.shutdown_drain_timeout_ms", .integer(100...60000)),
            ("\(ch).handler_dispatch.dispatch_buffer_size", .integer(10...1_000_000)),
            ("\(ch).handler_dispatch.completion_buffer_size", .integer(10...1_000_000)),
            ("\(ch).handler_dispatch.max_concurrent_handlers", .integer(1...10000)),
            ("\(ch).handler_dispatch.handler_timeout_ms", .integer(1000...3_600_000)),
            // ours: at 0 the worker would claim nothing while reporting healthy (upstream allows 0...100).
            ("\(ch).handler_dispatch.load_shedding.capacity_threshold_percent", .number(1.0...100.0)),
            ("\(ch).handler_dispatch.load_shedding.warning_threshold_percent", .number(0.0...100.0)),
            ("\(ch).ffi_dispatch.dispatch_buffer_size", .integer(100...50000)),  // doc
            ("\(ch).ffi_dispatch.completion_timeout_ms", .integer(1000...600_000)),  // doc
            ("\(ch).ffi_dispatch.callback_timeout_ms", .integer(100...60000)),  // doc
            ("\(ch).ffi_dispatch.starvation_warning_threshold_ms", .integer(1000...300_000)),  // doc
            ("\(ch).ffi_dispatch.completion_send_timeout_ms", .integer(1000...300_000)),  // doc
            ("worker.orchestration_client.base_url", .urlScheme(["http", "https"])),  // doc
            ("worker.orchestration_client.timeout_ms", .integer(100...300_000)),
            ("worker.orchestration_client.max_retries", .integer(0...10)),
            ("worker.orchestration_client.auth.header_name", .nonEmpty),
            ("worker.web.bind_address", .bindAddress),  // doc
            ("worker.web.request_timeout_ms", .integer(100...300_000)),
            ("worker.web.max_connections", .integer(1...100_000)),  // ours
            ("worker.web.max_connections_per_address", .integer(0...100_000)),  // ours
            ("worker.web.header_read_timeout_seconds", .integer(1...3600)),  // ours
            ("worker.web.idle_timeout_seconds", .integer(1...86400)),  // ours
            ("worker.web.database_pools.web_api_pool_size", .integer(1...1000)),
            ("worker.web.database_pools.web_api_max_connections", .integer(1...1000)),
            ("worker.web.database_pools.web_api_connection_timeout_seconds", .integer(1...300)),
            ("worker.web.database_pools.web_api_idle_timeout_seconds", .integer(1...3600)),
            ("worker.web.database_pools.max_total_connections_hint", .integer(1...10000)),
            ("worker.web.database_pools.operator_max_connections", .integer(1...1000)),  // ours
            ("worker.result_storage.max_result_bytes", .integer(1024...(256 * 1024 * 1024))),  // ours
            ("worker.result_storage.unstored_alert_seconds", .integer(1...86400)),  // ours
            ("worker.crash_recovery.scan_interval_ms", .integer(100...60000)),  // ours
            ("worker.crash_recovery.grace_period_ms", .integer(1000...3_600_000)),  // ours
            ("worker.crash_recovery.stale_in_progress_threshold_seconds", .integer(1...604_800)),  // ours
            ("worker.web.auth.jwt_issuer", .nonEmpty),
            ("worker.web.auth.jwt_audience", .nonEmpty),
            ("worker.web.auth.jwt_token_expiry_hours", .integer(1...168)),
            ("worker.web.auth.jwt_max_token_lifetime_seconds", .integer(0...31_536_000)),  // ours
            ("worker.web.auth.jwt_verification_method", .oneOf(["public_key", "jwks"])),
            ("worker.web.auth.jwks_refresh_interval_seconds", .integer(1...86400)),  // ours
            ("worker.web.auth.jwks_max_stale_seconds", .integer(0...86400)),  // ours
            ("worker.web.auth.jwt_allowed_algorithms[]", .oneOf(jwtAlgorithms)),  // ours
            ("worker.web.auth.permissions_claim", .nonEmpty),  // ours
            ("worker.web.auth.api_key_header", .nonEmpty),
            ("worker.web.auth.api_keys[].key", .nonEmpty),  // ours
            ("worker.grpc.bind_address", .bindAddress),  // doc
            ("worker.grpc.keepalive_interval_seconds", .integer(1...3600)),
            ("worker.grpc.keepalive_timeout_seconds", .integer(1...300)),
            ("worker.grpc.max_concurrent_streams", .integer(1...10000)),
            ("worker.grpc.max_frame_size", .integer(16384...16_777_215)),
            ("worker.grpc.max_connections", .integer(1...100_000)),  // ours
            ("worker.grpc.tls_handshake_timeout_seconds", .integer(1...3600)),  // ours
            ("worker.grpc.max_connections_per_address", .integer(0...100_000)),  // ours
            ("worker.grpc.idle_timeout_seconds", .integer(1...86400)),  // ours
            ("worker.grpc.max_connection_age_seconds", .integer(0...604_800)),  // ours
            ("worker.grpc.max_connection_age_grace_seconds", .integer(1...3600)),  // ours
        ]
    }()

    /// `[orchestration.dlq]` (upstream's `StalenessDetectionConfig` / `StalenessThresholds` bounds) and
    /// `[orchestration.web]` (the worker's web and auth rules).
    static let orchestrationRules: [(path: String, rule: Rule)] = {
        let sd = "orchestration.dlq.staleness_detection"
        return [
            ("\(sd).detection_interval_seconds", .integer(30...3600)),
            ("\(sd).batch_size", .integer(1...10000)),
            ("\(sd).thresholds.waiting_for_dependencies_minutes", .integer(1...1440)),
            ("\(sd).thresholds.waiting_for_retry_minutes", .integer(1...1440)),
            ("\(sd).thresholds.steps_in_process_minutes", .integer(1...1440)),
            ("\(sd).thresholds.task_max_lifetime_hours", .integer(1...168)),
            ("\(sd).actions.event_channel", .nonEmpty),
            ("orchestration.web.bind_address", .bindAddress),
            ("orchestration.web.request_timeout_ms", .integer(100...300_000)),
            ("orchestration.web.max_connections", .integer(1...100_000)),  // ours
            ("orchestration.web.max_connections_per_address", .integer(0...100_000)),  // ours
            ("orchestration.web.header_read_timeout_seconds", .integer(1...3600)),  // ours
            ("orchestration.web.idle_timeout_seconds", .integer(1...86400)),  // ours
            ("orchestration.web.database_pools.web_api_pool_size", .integer(1...1000)),
            ("orchestration.web.database_pools.web_api_max_connections", .integer(1...1000)),
            ("orchestration.web.database_pools.web_api_connection_timeout_seconds", .integer(1...300)),
            ("orchestration.web.database_pools.web_api_idle_timeout_seconds", .integer(1...3600)),
            ("orchestration.web.database_pools.max_total_connections_hint", .integer(1...10000)),
            ("orchestration.web.database_pools.operator_max_connections", .integer(1...1000)),  // ours
            ("orchestration.web.auth.jwt_issuer", .nonEmpty),
            ("orchestration.web.auth.jwt_audience", .nonEmpty),
            ("orchestration.web.auth.jwt_token_expiry_hours", .integer(1...168)),
            ("orchestration.web.auth.jwt_max_token_lifetime_seconds", .integer(0...31_536_000)),  // ours
            ("orchestration.web.auth.jwt_verification_method", .oneOf(["public_key", "jwks"])),
            ("orchestration.web.auth.jwks_refresh_interval_seconds", .integer(1...86400)),  // ours
            ("orchestration.web.auth.jwks_max_stale_seconds", .integer(0...86400)),  // ours
            ("orchestration.web.auth.jwt_allowed_algorithms[]", .oneOf(jwtAlgorithms)),  // ours
            ("orchestration.web.auth.permissions_claim", .nonEmpty),  // ours
            ("orchestration.web.auth.api_key_header", .nonEmpty),
            ("orchestration.web.auth.api_keys[].key", .nonEmpty),  // ours
        ]
    }()

    static let jwtAlgorithms = ["HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256", "ES384", "PS256", "PS384", "PS512", "EdDSA"]

    /// Keys whose string value must be one of a fixed set (the Swift enum's raw values).
    static let enumerations: [String: [String]] = [
        "common.queues.backend": CommonConfiguration.QueueBackend.allCases.map(\.rawValue),
        "common.cache.backend": CommonConfiguration.CacheBackend.allCases.map(\.rawValue),
        "worker.event_systems.worker.deployment_mode": WorkerConfiguration.DeploymentMode.allCases.map(\.rawValue),
        "worker.pgmq.statements": WorkerConfiguration.PGMQStatements.allCases.map(\.rawValue),  // ours
        "worker.orchestration_client.transport": WorkerConfiguration.ClientTransport.allCases.map(\.rawValue),
        "worker.orchestration_client.auth.type": WorkerConfiguration.ClientAuthType.allCases.map(\.rawValue),
    ]

    /// Element shapes of arrays whose default is empty (so the defaults cannot tell).
    static let arrayElements: [String: ConfigValue] = [
        "worker.event_systems.worker.metadata.fallback_poller.supported_namespaces": .string(""),
        "worker.web.auth.api_keys": (try? ConfigValue.encoding(WorkerConfiguration.APIKey())) ?? .table([:]),
        "orchestration.web.auth.api_keys": (try? ConfigValue.encoding(WorkerConfiguration.APIKey())) ?? .table([:]),
    ]

    /// Old key names still accepted: table path → (old key → current key).
    static let aliases: [String: [String: String]] = [
        "common.circuit_breakers.component_configs": ["pgmq": "messaging"]
    ]

    /// Keys skipped without a warning: tasker-core's `_docs` metadata tables anywhere, and the tables of
    /// upstream's `[orchestration]` context other than `dlq` and `web` (pre-merged "complete" files carry them).
    static func isSilentlyIgnored(key: String, parentPath: String) -> Bool {
        key == "_docs" || (parentPath == "orchestration" && key != "dlq" && key != "web")
    }

    /// The built-in defaults as a snake_case tree; its shape is the schema.
    static let defaults: ConfigValue = (try? ConfigValue.encoding(TaskerConfiguration())) ?? .table([:])
}
