import Foundation
import TaskerHandlerSDK
import TaskerModel

// The template bodies of the worker's REST API (`/v1/templates…`), shared with the gRPC
// `WorkerTemplateService`. Field names and nesting as upstream's `worker-openapi.json`.

/// `GET /v1/templates` (`TemplateListResponse`), plus `templates`: what `template_count` counts
/// (upstream gives only the count; a listed deliberate difference).
struct TemplateListResponse: Codable, Sendable, Equatable {
    package var supportedNamespaces: [String]
    /// Templates this worker serves (registered in its namespaces).
    var templateCount: Int
    /// Only with `include_cache_stats=true`; else null.
    var cacheStats: TemplateCacheStats?
    /// Upstream's fixed list: command_processing, database_access, message_queues, ffi_integration.
    var workerCapabilities: [String]
    /// The templates `templateCount` counts, by namespace, name and version (ours only).
    package var templates: [TemplateSummary]

    package init(
        supportedNamespaces: [String], templateCount: Int, cacheStats: TemplateCacheStats?, workerCapabilities: [String],
        templates: [TemplateSummary] = []
    ) {
        self.supportedNamespaces = supportedNamespaces
        self.templateCount = templateCount
        self.cacheStats = cacheStats
        self.workerCapabilities = workerCapabilities
        self.templates = templates
    }

    enum CodingKeys: String, CodingKey {
        case supportedNamespaces = "supported_namespaces"
        case templateCount = "template_count"
        case cacheStats = "cache_stats"
        case workerCapabilities = "worker_capabilities"
        case templates
    }

    package init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        supportedNamespaces = try c.decode([String].self, forKey: .supportedNamespaces)
        templateCount = try c.decode(Int.self, forKey: .templateCount)
        cacheStats = try c.decodeIfPresent(TemplateCacheStats.self, forKey: .cacheStats)
        workerCapabilities = try c.decode([String].self, forKey: .workerCapabilities)
        templates = try c.decodeIfPresent([TemplateSummary].self, forKey: .templates) ?? []
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(supportedNamespaces, forKey: .supportedNamespaces)
        try c.encode(templateCount, forKey: .templateCount)
        try c.encode(cacheStats, forKey: .cacheStats)
        try c.encode(workerCapabilities, forKey: .workerCapabilities)
        try c.encode(templates, forKey: .templates)
    }
}

/// One template of `TemplateListResponse.templates`.
struct TemplateSummary: Codable, Sendable, Equatable {
    package var namespace: String
    package var name: String
    package var version: String

    package init(namespace: String, name: String, version: String) {
        self.namespace = namespace
        self.name = name
        self.version = version
    }
}

/// The template cache's figures (`CacheStats`).
struct TemplateCacheStats: Codable, Sendable, Equatable {
    var totalCached: Int
    var cacheHits: Int
    var cacheMisses: Int
    var cacheEvictions: Int
    var oldestEntryAgeSeconds: Int
    package var averageAccessCount: Double
    package var supportedNamespaces: [String]

    package init(
        totalCached: Int, cacheHits: Int, cacheMisses: Int, cacheEvictions: Int, oldestEntryAgeSeconds: Int,
        averageAccessCount: Double, supportedNamespaces: [String]
    ) {
        self.totalCached = totalCached
        self.cacheHits = cacheHits
        self.cacheMisses = cacheMisses
        self.cacheEvictions = cacheEvictions
        self.oldestEntryAgeSeconds = oldestEntryAgeSeconds
        self.averageAccessCount = averageAccessCount
        self.supportedNamespaces = supportedNamespaces
    }

    enum CodingKeys: String, CodingKey {
        case totalCached = "total_cached"
        case cacheHits = "cache_hits"
        case cacheMisses = "cache_misses"
        case cacheEvictions = "cache_evictions"
        case oldestEntryAgeSeconds = "oldest_entry_age_seconds"
        case averageAccessCount = "average_access_count"
        case supportedNamespaces = "supported_namespaces"
    }

    /// `average_access_count` as a float (`4.0`), as upstream writes its `f64`.
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(totalCached, forKey: .totalCached)
        try c.encode(cacheHits, forKey: .cacheHits)
        try c.encode(cacheMisses, forKey: .cacheMisses)
        try c.encode(cacheEvictions, forKey: .cacheEvictions)
        try c.encode(oldestEntryAgeSeconds, forKey: .oldestEntryAgeSeconds)
        try c.encode(JSONFloat(averageAccessCount), forKey: .averageAccessCount)
        try c.encode(supportedNamespaces, forKey: .supportedNamespaces)
    }
}

/// `GET /v1/templates/{namespace}/{name}/{version}` (`TemplateResponse`).
struct TemplateResponse: Codable, Sendable, Equatable {
    package var template: ResolvedTemplate
    var handlerMetadata: HandlerMetadata
    /// The template is held in the worker's template cache (it is after every successful lookup).
    package var cached: Bool
    /// Always null (as upstream).
    var cacheAgeSeconds: Int?
    /// Always null (as upstream).
    package var accessCount: Int?

    package init(
        template: ResolvedTemplate, handlerMetadata: HandlerMetadata, cached: Bool,
        cacheAgeSeconds: Int? = nil, accessCount: Int? = nil
    ) {
        self.template = template
        self.handlerMetadata = handlerMetadata
        self.cached = cached
        self.cacheAgeSeconds = cacheAgeSeconds
        self.accessCount = accessCount
    }

    enum CodingKeys: String, CodingKey {
        case template, cached
        case handlerMetadata = "handler_metadata"
        case cacheAgeSeconds = "cache_age_seconds"
        case accessCount = "access_count"
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(template, forKey: .template)
        try c.encode(handlerMetadata, forKey: .handlerMetadata)
        try c.encode(cached, forKey: .cached)
        try c.encode(cacheAgeSeconds, forKey: .cacheAgeSeconds)
        try c.encode(accessCount, forKey: .accessCount)
    }
}

/// The `template` member of `TemplateResponse`: `{template, environment, resolved_at}`.
/// Templates are served as registered (environment overrides are not applied by this worker).
struct ResolvedTemplate: Codable, Sendable, Equatable {
    package var template: TaskTemplate
    /// The environment the worker runs in (`common.execution.environment`).
    package var environment: String
    var resolvedAt: Date

    package init(template: TaskTemplate, environment: String, resolvedAt: Date) {
        self.template = template
        self.environment = environment
        self.resolvedAt = resolvedAt
    }

    enum CodingKeys: String, CodingKey {
        case template, environment
        case resolvedAt = "resolved_at"
    }
}

/// How the task is registered (`HandlerMetadata`), from `tasker.named_tasks`.
struct HandlerMetadata: Codable, Sendable, Equatable {
    package var namespace: String
    package var name: String
    package var version: String
    /// Tasker templates have no task-level handler class: `""`, as upstream writes it.
    var handlerClass: String
    /// The registered template (`named_tasks.configuration`).
    var configSchema: JSONValue?
    /// Upstream leaves it null (the worker fills it so too).
    package var defaultDependentSystem: String?
    /// When the template was last registered (`named_tasks.updated_at`).
    var registeredAt: Date

    package init(
        namespace: String, name: String, version: String, handlerClass: String, configSchema: JSONValue?,
        defaultDependentSystem: String?, registeredAt: Date
    ) {
        self.namespace = namespace
        self.name = name
        self.version = version
        self.handlerClass = handlerClass
        self.configSchema = configSchema
        self.defaultDependentSystem = defaultDependentSystem
        self.registeredAt = registeredAt
    }

    enum CodingKeys: String, CodingKey {
        case namespace, name, version
        case handlerClass = "handler_class"
        case configSchema = "config_schema"
        case defaultDependentSystem = "default_dependent_system"
        case registeredAt = "registered_at"
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(namespace, forKey: .namespace)
        try c.encode(name, forKey: .name)
        try c.encode(version, forKey: .version)
        try c.encode(handlerClass, forKey: .handlerClass)
        try c.encode(configSchema ?? .null, forKey: .configSchema)
        try c.encode(defaultDependentSystem, forKey: .defaultDependentSystem)
        try c.encode(registeredAt, forKey: .registeredAt)
    }
}

/// `POST /v1/templates/{namespace}/{name}/{version}/validate` (`TemplateValidationResponse`).
struct TemplateValidationResponse: Codable, Sendable, Equatable {
    package var valid: Bool
    package var errors: [String]
    var requiredCapabilities: [String]
    /// The steps' handler callables, in step order.
    var stepHandlers: [String]

    package init(valid: Bool, errors: [String], requiredCapabilities: [String], stepHandlers: [String]) {
        self.valid = valid
        self.errors = errors
        self.requiredCapabilities = requiredCapabilities
        self.stepHandlers = stepHandlers
    }

    enum CodingKeys: String, CodingKey {
        case valid, errors
        case requiredCapabilities = "required_capabilities"
        case stepHandlers = "step_handlers"
    }
}
