import Foundation
import SwiftProtobuf

// The REST bodies (`API/`) as `tasker.v1` messages: the same content, field for field. Optional
// members become proto3 optionals (absent, not empty); dates become `google.protobuf.Timestamp`.

extension Tasker_V1_WorkerBasicHealthResponse {
    /// `CheckHealth` / `CheckLiveness` from `/health` / `/health/live`.
    package init(_ body: BasicHealthResponse) {
        self.init()
        status = body.status
        timestamp = Google_Protobuf_Timestamp(date: body.timestamp)
        workerID = body.workerID
    }
}

extension Tasker_V1_WorkerReadinessResponse {
    /// `CheckReadiness` from `/health/ready`.
    package init(_ body: ReadinessResponse) {
        self.init()
        status = body.status
        timestamp = Google_Protobuf_Timestamp(date: body.timestamp)
        workerID = body.workerID
        checks.database = Tasker_V1_WorkerHealthCheck(body.checks.database)
        checks.commandProcessor = Tasker_V1_WorkerHealthCheck(body.checks.commandProcessor)
        checks.queueProcessing = Tasker_V1_WorkerHealthCheck(body.checks.queueProcessing)
        systemInfo = Tasker_V1_WorkerSystemInfo(body.systemInfo)
    }
}

extension Tasker_V1_WorkerDetailedHealthResponse {
    /// `CheckDetailedHealth` from `/health/detailed`.
    package init(_ body: DetailedHealthResponse) {
        self.init()
        status = body.status
        timestamp = Google_Protobuf_Timestamp(date: body.timestamp)
        workerID = body.workerID
        checks.database = Tasker_V1_WorkerHealthCheck(body.checks.database)
        checks.commandProcessor = Tasker_V1_WorkerHealthCheck(body.checks.commandProcessor)
        checks.queueProcessing = Tasker_V1_WorkerHealthCheck(body.checks.queueProcessing)
        checks.eventSystem = Tasker_V1_WorkerHealthCheck(body.checks.eventSystem)
        checks.stepProcessing = Tasker_V1_WorkerHealthCheck(body.checks.stepProcessing)
        checks.circuitBreakers = Tasker_V1_WorkerHealthCheck(body.checks.circuitBreakers)
        systemInfo = Tasker_V1_WorkerSystemInfo(body.systemInfo)
        if let cache = body.distributedCache {
            var info = Tasker_V1_DistributedCacheInfo()
            info.enabled = cache.enabled
            info.provider = cache.provider
            info.healthy = cache.healthy
            distributedCache = info
        }
    }
}

extension Tasker_V1_WorkerHealthCheck {
    /// One check of the health bodies.
    package init(_ check: HealthCheck) {
        self.init()
        status = check.status
        if let message = check.message { self.message = message }
        durationMs = UInt64(max(0, check.durationMs))
        lastChecked = Google_Protobuf_Timestamp(date: check.lastChecked)
    }
}

extension Tasker_V1_WorkerSystemInfo {
    /// `system_info` of the readiness and detailed bodies.
    package init(_ info: WorkerSystemInfo) {
        self.init()
        version = info.version
        environment = info.environment
        uptimeSeconds = UInt64(max(0, info.uptimeSeconds))
        workerType = info.workerType
        databasePoolSize = UInt32(clamping: info.databasePoolSize)
        commandProcessorActive = info.commandProcessorActive
        supportedNamespaces = info.supportedNamespaces
        if let pools = info.poolUtilization {
            var utilization = Tasker_V1_WorkerPoolUtilizationInfo()
            utilization.taskerPool = Tasker_V1_WorkerPoolDetail(pools.taskerPool)
            utilization.pgmqPool = Tasker_V1_WorkerPoolDetail(pools.pgmqPool)
            poolUtilization = utilization
        }
    }
}

extension Tasker_V1_WorkerPoolDetail {
    /// One pool's figures.
    package init(_ pool: PoolDetail) {
        self.init()
        activeConnections = UInt32(clamping: pool.activeConnections)
        idleConnections = UInt32(clamping: pool.idleConnections)
        maxConnections = UInt32(clamping: pool.maxConnections)
        utilizationPercent = pool.utilizationPercent
        totalAcquires = UInt64(max(0, pool.totalAcquires))
        slowAcquires = UInt64(max(0, pool.slowAcquires))
        acquireErrors = UInt64(max(0, pool.acquireErrors))
        averageAcquireTimeMs = pool.averageAcquireTimeMs
        maxAcquireTimeMs = pool.maxAcquireTimeMs
    }
}

extension Tasker_V1_WorkerGetConfigResponse {
    /// `GetConfig` from `/config`.
    package init(_ body: WorkerConfigResponse) {
        self.init()
        metadata.timestamp = Google_Protobuf_Timestamp(date: body.metadata.timestamp)
        metadata.environment = body.metadata.environment
        metadata.version = body.metadata.version
        workerID = body.workerID
        workerType = body.workerType
        auth.enabled = body.auth.enabled
        auth.verificationMethod = body.auth.verificationMethod
        auth.jwtIssuer = body.auth.jwtIssuer
        auth.jwtAudience = body.auth.jwtAudience
        auth.apiKeyHeader = body.auth.apiKeyHeader
        auth.apiKeyCount = Int32(clamping: body.auth.apiKeyCount)
        auth.strictValidation = body.auth.strictValidation
        auth.allowedAlgorithms = body.auth.allowedAlgorithms
        messaging.backend = body.messaging.backend
        messaging.queues = body.messaging.queues
    }
}

extension Tasker_V1_WorkerTemplateListResponse {
    /// `ListTemplates` from `/v1/templates`.
    package init(_ body: TemplateListResponse) {
        self.init()
        supportedNamespaces = body.supportedNamespaces
        templateCount = Int64(body.templateCount)
        if let stats = body.cacheStats {
            var cache = Tasker_V1_CacheStats()
            cache.totalCached = UInt64(max(0, stats.totalCached))
            cache.cacheHits = UInt64(max(0, stats.cacheHits))
            cache.cacheMisses = UInt64(max(0, stats.cacheMisses))
            cache.cacheEvictions = UInt64(max(0, stats.cacheEvictions))
            cache.oldestEntryAgeSeconds = UInt64(max(0, stats.oldestEntryAgeSeconds))
            cache.averageAccessCount = stats.averageAccessCount
            cache.supportedNamespaces = stats.supportedNamespaces
            cacheStats = cache
        }
        workerCapabilities = body.workerCapabilities
    }
}

extension Tasker_V1_WorkerTemplateResponse {
    /// `GetTemplate` from `/v1/templates/{namespace}/{name}/{version}`: the task template's name,
    /// namespace, version, description and steps (`{name, description, retryable, max_attempts}`);
    /// handler metadata carries the registration's namespace, name and version, with no description
    /// and no step names (as upstream).
    package init(_ body: TemplateResponse) {
        self.init()
        let task = body.template.template
        template.name = task.name
        template.namespace = task.namespaceName
        template.version = task.version
        if let description = task.description { template.description_p = description }
        template.steps = task.steps.map { step in
            var definition = Tasker_V1_WorkerStepDefinition()
            definition.name = step.name
            if let description = step.description { definition.description_p = description }
            definition.retryable = step.retry.retryable
            definition.maxAttempts = Int32(clamping: step.retry.maxAttempts)
            return definition
        }
        handlerMetadata.namespace = body.handlerMetadata.namespace
        handlerMetadata.handlerName = body.handlerMetadata.name
        handlerMetadata.version = body.handlerMetadata.version
        cached = body.cached
        if let age = body.cacheAgeSeconds { cacheAgeSeconds = UInt64(max(0, age)) }
        if let count = body.accessCount { accessCount = UInt64(max(0, count)) }
    }
}
