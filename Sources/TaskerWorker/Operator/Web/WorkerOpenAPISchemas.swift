import TaskerHTTP
import TaskerHandlerSDK
import TaskerModel

/// The `components.schemas` of `WorkerOpenAPIDocument`: one schema per body the server sends,
/// with the same field names, nesting and nullability as the API models in `API/`.
enum WorkerOpenAPISchemas {
    // MARK: - Building blocks (TaskerHTTP's `OpenAPISchema`, shared with the orchestration's document)

    static let string = OpenAPISchema.string
    static let dateTime = OpenAPISchema.dateTime
    static let boolean = OpenAPISchema.boolean
    static let double = OpenAPISchema.double
    static let uint64 = OpenAPISchema.uint64
    static let uint32 = OpenAPISchema.uint32
    static let strings = OpenAPISchema.strings
    static let nullableString = OpenAPISchema.nullableString
    static let nullableUInt64 = OpenAPISchema.nullableUInt64
    static let anyValue = OpenAPISchema.anyValue

    static func ref(_ name: String) -> JSONValue { OpenAPISchema.ref(name) }

    static func nullable(_ name: String) -> JSONValue { OpenAPISchema.nullable(name) }

    /// An object schema; every property is required unless listed in `optional`.
    static func object(
        _ properties: KeyValuePairs<String, JSONValue>, optional: Set<String> = [],
        description: String? = nil
    ) -> JSONValue {
        OpenAPISchema.object(properties, optional: optional, description: description)
    }

    // MARK: - Schemas

    static var all: JSONValue {
        .object(
            health.merging(templates) { a, _ in a }.merging(configAndErrors) { a, _ in a }
                .merging(OpenAPISchema.apiError) { a, _ in a })
    }

    static let health: [String: JSONValue] = [
        "BasicHealthResponse": object(["status": string, "timestamp": dateTime, "worker_id": string]),
        "HealthCheck": object(
            [
                "status": string, "message": nullableString, "duration_ms": uint64,
                "last_checked": dateTime,
            ], optional: ["message"]),
        "WorkerReadinessChecks": object([
            "database": ref("HealthCheck"), "command_processor": ref("HealthCheck"),
            "queue_processing": ref("HealthCheck"),
        ]),
        "ReadinessResponse": object([
            "status": string, "timestamp": dateTime, "worker_id": string,
            "checks": ref("WorkerReadinessChecks"), "system_info": ref("WorkerSystemInfo"),
        ]),
        "WorkerDetailedChecks": object([
            "database": ref("HealthCheck"), "command_processor": ref("HealthCheck"),
            "queue_processing": ref("HealthCheck"), "event_system": ref("HealthCheck"),
            "step_processing": ref("HealthCheck"), "circuit_breakers": ref("HealthCheck"),
        ]),
        "DetailedHealthResponse": object(
            [
                "status": string, "timestamp": dateTime, "worker_id": string, "checks": ref("WorkerDetailedChecks"),
                "system_info": ref("WorkerSystemInfo"), "distributed_cache": nullable("DistributedCacheInfo"),
                "step_recovery": ref("StepRecoveryHealth"),
            ], optional: ["distributed_cache", "step_recovery"]),
        // Ours (not upstream's): liveness, crash recovery and long-running in_progress steps by worker.
        "StepRecoveryHealth": object(
            [
                "liveness_lease_held": boolean, "scanner_enabled": boolean, "steps_recovered": uint64,
                "late_results_refused": uint64, "in_progress_threshold_seconds": uint64,
                "stale_in_progress_steps": nullableUInt64,
                "stale_in_progress_by_worker": ["type": "array", "items": ref("StaleInProgressSteps")],
            ], optional: ["stale_in_progress_steps", "stale_in_progress_by_worker"]),
        "StaleInProgressSteps": object([
            "worker_uuid": ["type": "string", "description": "The claiming worker's uuid, `unrecorded` or `malformed`."],
            "steps": uint64, "oldest_seconds": double,
        ]),
        "WorkerSystemInfo": object(
            [
                "version": string, "environment": string, "uptime_seconds": uint64, "worker_type": string,
                "database_pool_size": uint32, "command_processor_active": boolean, "supported_namespaces": strings,
                "pool_utilization": nullable("PoolUtilizationInfo"),
            ], optional: ["pool_utilization"]),
        "PoolUtilizationInfo": object(["tasker_pool": ref("PoolDetail"), "pgmq_pool": ref("PoolDetail")]),
        "PoolDetail": object([
            "active_connections": uint32, "idle_connections": uint32, "max_connections": uint32,
            "utilization_percent": double, "total_acquires": uint64, "slow_acquires": uint64,
            "acquire_errors": uint64, "average_acquire_time_ms": double, "max_acquire_time_ms": double,
        ]),
        "DistributedCacheInfo": object(["enabled": boolean, "provider": string, "healthy": boolean]),
    ]

    static let templates: [String: JSONValue] = [
        "TemplateListResponse": object(
            [
                "supported_namespaces": strings, "template_count": ["type": "integer", "minimum": 0],
                "cache_stats": nullable("CacheStats"), "worker_capabilities": strings,
                "templates": ["type": "array", "items": ref("TemplateSummary")],
            ], optional: ["cache_stats"]),
        "TemplateSummary": object(["namespace": string, "name": string, "version": string]),
        "CacheStats": object([
            "total_cached": ["type": "integer", "minimum": 0], "cache_hits": uint64, "cache_misses": uint64,
            "cache_evictions": uint64, "oldest_entry_age_seconds": uint64, "average_access_count": double,
            "supported_namespaces": strings,
        ]),
        "TemplateResponse": object(
            [
                "template": ref("ResolvedTaskTemplate"), "handler_metadata": ref("HandlerMetadata"), "cached": boolean,
                "cache_age_seconds": nullableUInt64, "access_count": nullableUInt64,
            ], optional: ["cache_age_seconds", "access_count"]),
        "ResolvedTaskTemplate": object([
            "template": ["type": "object", "description": "The task template as registered (upstream TaskTemplate JSON)."],
            "environment": string, "resolved_at": dateTime,
        ]),
        "HandlerMetadata": object(
            [
                "namespace": string, "name": string, "version": string, "handler_class": string,
                "config_schema": anyValue, "default_dependent_system": nullableString, "registered_at": dateTime,
            ], optional: ["config_schema", "default_dependent_system"]),
        "TemplateValidationResponse": object([
            "valid": boolean, "errors": strings, "required_capabilities": strings, "step_handlers": strings,
        ]),
    ]

    static let configAndErrors: [String: JSONValue] = [
        "WorkerConfigResponse": object([
            "metadata": ref("ConfigMetadata"), "worker_id": string, "worker_type": string,
            "auth": ref("SafeAuthConfig"), "messaging": ref("SafeMessagingConfig"),
        ]),
        "ConfigMetadata": object(["timestamp": dateTime, "environment": string, "version": string]),
        "SafeAuthConfig": object([
            "enabled": boolean, "verification_method": string, "jwt_issuer": string, "jwt_audience": string,
            "api_key_header": string, "api_key_count": ["type": "integer", "minimum": 0],
            "strict_validation": boolean, "allowed_algorithms": strings,
        ]),
        "SafeMessagingConfig": object(["backend": string, "queues": strings]),
        "ErrorResponse": object(
            [
                "error": string, "message": string, "timestamp": dateTime, "request_id": nullableString,
            ], optional: ["request_id"], description: "Sent by the health and template handlers."),
        "WorkerMetricsResponse": object([
            "metrics": ["type": "object", "additionalProperties": ref("MetricValue")],
            "timestamp": dateTime, "worker_id": string,
        ]),
        "MetricValue": object([
            "value": double, "metric_type": string,
            "labels": ["type": "object", "additionalProperties": string], "help": string,
        ]),
        "DomainEventStats": object([
            "router": ["type": "object"], "in_process_bus": ["type": "object"],
            "captured_at": dateTime, "worker_id": string,
        ]),
    ]
}
