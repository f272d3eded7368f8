import Foundation
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Why a template query has no answer; each maps to an `ErrorResponse` kind (REST) or a status (gRPC).
enum TemplateQueryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Unknown template, or one outside this worker's namespaces (404 `template_not_found`).
    case templateNotFound(namespace: String, name: String, version: String)
    /// The template is known but its `named_tasks` row is gone (404 `handler_metadata_not_found`).
    case handlerMetadataNotFound(namespace: String, name: String, version: String)
    /// The database (or something else) failed (500 `internal_error`). `summary` is the generic text a
    /// client sees (`OperatorErrorText.summary`); `detail` (credentials hidden) is only logged.
    case internalError(summary: String, detail: String)

    /// The internal error for `error`.
    static func failure(_ error: any Error) -> TemplateQueryError {
        .internalError(summary: OperatorErrorText.summary(error), detail: OperatorErrorText.logDetail(error))
    }

    /// The full text, for logs (an internal error's detail included).
    package var description: String {
        switch self {
        case .internalError(let summary, let detail): "Internal error: \(summary): \(detail)"
        default: clientMessage
        }
    }

    /// The text a client is sent: never the database's own message or SQL.
    var clientMessage: String {
        switch self {
        case .templateNotFound(let ns, let name, let version): "Template not found: \(ns)/\(name)/\(version)"
        case .handlerMetadataNotFound(let ns, let name, let version): "Handler metadata not found: \(ns)/\(name)/\(version)"
        case .internalError(let summary, _): "Internal error: \(summary)"
        }
    }

    /// The `ErrorResponse.error` value for this error.
    package var kind: ErrorResponse.Kind {
        switch self {
        case .templateNotFound: .templateNotFound
        case .handlerMetadataNotFound: .handlerMetadataNotFound
        case .internalError: .internalError
        }
    }
}

/// Answers the template queries (`/v1/templates…`, gRPC `WorkerTemplateService`) from the worker's
/// template registry and `tasker.named_tasks`.
struct WorkerTemplateQueryService: Sendable {
    package let runtime: WorkerRuntime

    /// Upstream's fixed capability list.
    static let workerCapabilities = ["command_processing", "database_access", "message_queues", "ffi_integration"]

    package init(runtime: WorkerRuntime) {
        self.runtime = runtime
    }

    /// The namespaces, the templates registered in them (and their number), and (on request) cache figures.
    ///
    /// The cache figures are the template registry's own (`TaskTemplateRegistry.cacheStatistics`):
    /// entries, hits (lookups from memory: every step hydration asks), misses (database reads),
    /// evictions, the oldest entry's age and the average number of lookups per entry.
    package func list(includeCacheStats: Bool) async throws(TemplateQueryError) -> TemplateListResponse {
        let namespaces = await runtime.templates.supportedNamespaces
        let templates = try await registeredTemplates(namespaces: namespaces)
        var stats: TemplateCacheStats?
        if includeCacheStats {
            let cache = await runtime.templates.cacheStatistics
            stats = TemplateCacheStats(
                totalCached: cache.entries, cacheHits: cache.hits, cacheMisses: cache.misses,
                cacheEvictions: cache.evictions, oldestEntryAgeSeconds: Int(cache.oldestEntryAge.components.seconds),
                averageAccessCount: cache.averageAccessCount, supportedNamespaces: namespaces)
        }
        return TemplateListResponse(
            supportedNamespaces: namespaces, templateCount: templates.count, cacheStats: stats,
            workerCapabilities: Self.workerCapabilities, templates: templates)
    }

    /// One template with its registration metadata.
    package func get(namespace: String, name: String, version: String) async throws(TemplateQueryError) -> TemplateResponse {
        let template = try await lookup(namespace: namespace, name: name, version: version)
        let row: PostgresRow?
        do {
            row = try await runtime.pool.query(
                """
                SELECT nt.updated_at
                  FROM tasker.named_tasks nt
                  JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
                 WHERE tn.name = $1 AND nt.name = $2 AND nt.version = $3
                """, [namespace, name, version], lane: .operator
            ).first
        } catch {
            throw .failure(error)
        }
        guard let row, let registeredAt = try? row.decode("updated_at", as: Date.self) else {
            throw .handlerMetadataNotFound(namespace: namespace, name: name, version: version)
        }
        // As upstream fills them: no task-level handler class (""), no default dependent system (null).
        let metadata = HandlerMetadata(
            namespace: namespace, name: name, version: version, handlerClass: "",
            configSchema: try? JSONValue(encoding: template),
            defaultDependentSystem: nil, registeredAt: registeredAt)
        let resolved = ResolvedTemplate(
            template: template, environment: runtime.configuration.common.execution.environment,
            resolvedAt: Date())
        return TemplateResponse(template: resolved, handlerMetadata: metadata, cached: true)
    }

    /// Whether this worker can run the template: the template's own rules (`TaskTemplateValidator`)
    /// and a registered handler for every step's callable.
    package func validate(
        namespace: String, name: String, version: String
    ) async throws(TemplateQueryError)
        -> TemplateValidationResponse
    {
        let template = try await lookup(namespace: namespace, name: name, version: version)
        var errors = TaskTemplateValidator.validate(template).map { finding in
            finding.step.map { "step \"\($0)\": \(finding.message)" } ?? finding.message
        }
        for step in template.steps
        where runtime.handlers.resolve(callable: step.handler.callable, templateStepName: step.name) == nil {
            errors.append("step \"\(step.name)\": no handler registered for callable \"\(step.handler.callable)\"")
        }
        return TemplateValidationResponse(
            valid: errors.isEmpty, errors: errors, requiredCapabilities: Self.requiredCapabilities(template),
            stepHandlers: template.steps.map(\.handler.callable))
    }

    /// Upstream's capability inference from callable names: `FFI` → `ffi`, `External` →
    /// `external_api`, `Database` → `database_access`; sorted, without duplicates.
    static func requiredCapabilities(_ template: TaskTemplate) -> [String] {
        var capabilities = Set<String>()
        for step in template.steps {
            let callable = step.handler.callable
            if callable.contains("FFI") { capabilities.insert("ffi") }
            if callable.contains("External") { capabilities.insert("external_api") }
            if callable.contains("Database") { capabilities.insert("database_access") }
        }
        return capabilities.sorted()
    }

    // MARK: - Helpers

    /// The template, if it is in one of this worker's namespaces and registered.
    private func lookup(namespace: String, name: String, version: String) async throws(TemplateQueryError) -> TaskTemplate {
        let notFound = TemplateQueryError.templateNotFound(namespace: namespace, name: name, version: version)
        guard await runtime.templates.supportedNamespaces.contains(namespace) else { throw notFound }
        do {
            guard
                let template = try await runtime.templates.template(
                    namespace: namespace, name: name, version: version,
                    lane: .operator)
            else {
                throw notFound
            }
            return template
        } catch let error as TemplateQueryError {
            throw error
        } catch is TaskTemplateRegistryError {
            throw notFound  // an unreadable registration is no template (as upstream)
        } catch {
            throw .failure(error)
        }
    }

    private func registeredTemplates(namespaces: [String]) async throws(TemplateQueryError) -> [TemplateSummary] {
        guard !namespaces.isEmpty else { return [] }
        do {
            let rows = try await runtime.pool.query(
                """
                SELECT tn.name AS namespace, nt.name, nt.version
                  FROM tasker.named_tasks nt
                  JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
                 WHERE tn.name = ANY(string_to_array($1::text, ','))
                 ORDER BY tn.name, nt.name, nt.version
                """, [namespaces.joined(separator: ",")], lane: .operator)
            return try rows.map {
                TemplateSummary(namespace: try $0.decode("namespace"), name: try $0.decode("name"), version: try $0.decode("version"))
            }
        } catch {
            throw .failure(error)
        }
    }
}
