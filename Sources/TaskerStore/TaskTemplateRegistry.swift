import Foundation
import Logging
import TaskerModel
import TaskerPostgres

/// Why the registry could not register or produce a template.
public enum TaskTemplateRegistryError: Error, CustomStringConvertible, Sendable {
    /// The template failed `TaskTemplateValidator` (registration refused).
    case invalidTemplate(template: String, problems: [String])
    /// The database has no Tasker schema (a table, schema or PGMQ function is missing): it was never
    /// migrated. `missing`: the server's message.
    case schemaMissing(missing: String)
    /// `named_tasks.configuration` is NULL or `{}`.
    case emptyConfiguration(template: String)
    /// `named_tasks.configuration` is not a readable template.
    case undecodableConfiguration(template: String, reason: String)

    public var description: String {
        switch self {
        case .invalidTemplate(let template, let problems):
            return "template \(template) is invalid: " + problems.joined(separator: "; ")
        case .schemaMissing(let missing):
            return "the database has no Tasker schema (\(missing)): run `tasker-worker migrate` against it first, "
                + "with the same configuration (DATABASE_URL or --config)"
        case .emptyConfiguration(let template):
            return "template \(template) has an empty configuration in tasker.named_tasks "
                + "(NULL or {}); re-register it from its YAML file"
        case .undecodableConfiguration(let template, let reason):
            return "template \(template) has a configuration in tasker.named_tasks that is not a task template: \(reason)"
        }
    }
}

/// Registers templates in the database at boot and serves them (from memory, else from
/// `tasker.named_tasks.configuration`) during hydration.
///
/// Registration follows the Rust worker: find or create `task_namespaces(name)`; update the
/// `named_tasks` row of (name, version, namespace) — `description` and `configuration` through
/// `COALESCE`, `updated_at = NOW()` — or insert it with `identity_strategy = 'strict'`; then create
/// (idempotently) the queues of every namespace and the orchestration queues.
public actor TaskTemplateRegistry {
    /// Queues created at boot whatever the namespaces.
    public static let orchestrationQueues = [
        "orchestration_step_results", "orchestration_task_requests", "orchestration_task_finalizations",
    ]

    /// The queues of one namespace: `worker_<ns>_queue`, `<ns>_domain_events`, `<ns>_domain_events_dlq`.
    public static func queues(forNamespace namespace: String) -> [String] {
        ["worker_\(namespace)_queue", "\(namespace)_domain_events", "\(namespace)_domain_events_dlq"]
    }

    private struct Key: Hashable {
        let namespace: String
        let name: String
        let version: String
    }

    private let pool: PostgresConnectionPool
    /// Where the queues are created (`[common.pgmq_database]`, or `pool`).
    private let queuePool: PostgresConnectionPool
    private let logger: Logger
    private var cache: [Key: CacheEntry] = [:]
    private var namespaces: Set<String> = []
    private var hits = 0
    private var misses = 0
    private var evictions = 0

    private struct CacheEntry {
        let template: TaskTemplate
        let cachedAt: ContinuousClock.Instant
        var accessCount = 0
    }

    /// Figures of the in-memory template cache (the REST/gRPC `cache_stats`).
    public struct CacheStatistics: Sendable, Equatable {
        public var entries: Int
        /// Lookups answered from memory.
        public var hits: Int
        /// Lookups that read the database.
        public var misses: Int
        /// Entries dropped by `invalidate`/`invalidateAll`.
        public var evictions: Int
        /// Age of the oldest entry (0 when empty).
        public var oldestEntryAge: Duration
        /// Lookups per entry, on average (0 when empty).
        public var averageAccessCount: Double
    }

    /// The cache's current figures.
    public var cacheStatistics: CacheStatistics {
        let now = ContinuousClock.now
        let oldest = cache.values.map { $0.cachedAt.duration(to: now) }.max() ?? .zero
        let accesses = cache.values.reduce(0) { $0 + $1.accessCount }
        return CacheStatistics(
            entries: cache.count, hits: hits, misses: misses, evictions: evictions,
            oldestEntryAge: oldest,
            averageAccessCount: cache.isEmpty ? 0 : Double(accesses) / Double(cache.count))
    }

    /// A registry of the templates in `pool`'s database; their queues are created in `queuePool`'s
    /// (the queues' own database, or the same pool).
    public init(pool: PostgresConnectionPool, queuePool: PostgresConnectionPool? = nil, logger: Logger = Logger(label: "tasker.templates"))
    {
        self.pool = pool
        self.queuePool = queuePool ?? pool
        self.logger = logger
    }

    /// Namespaces of the templates registered through this registry, sorted.
    public var supportedNamespaces: [String] { namespaces.sorted() }

    /// Upserts `templates` and creates their queues. Each template is written in its own transaction;
    /// an invalid template throws before anything is written.
    public func register(_ templates: [TaskTemplate]) async throws {
        for template in templates {
            let findings = TaskTemplateValidator.validate(template)
            if !findings.isEmpty {
                throw TaskTemplateRegistryError.invalidTemplate(
                    template: template.identifier,
                    problems: findings.map { finding in
                        finding.step.map { "step \"\($0)\": \(finding.message)" } ?? finding.message
                    })
            }
        }
        do {
            try await upsertAll(templates)
        } catch let error as PostgresError where error.isUndefinedObject {
            throw TaskTemplateRegistryError.schemaMissing(missing: error.message)
        }
    }

    private func upsertAll(_ templates: [TaskTemplate]) async throws {
        for template in templates {
            try await upsert(template)
            let key = Key(namespace: template.namespaceName, name: template.name, version: template.version)
            cache[key] = CacheEntry(template: template, cachedAt: .now)
            namespaces.insert(template.namespaceName)
            logger.info(
                "registered task template",
                metadata: [
                    "namespace": "\(template.namespaceName)", "name": "\(template.name)", "version": "\(template.version)",
                ])
        }
        let registered = Set(templates.map(\.namespaceName)).sorted()
        try await createQueues(registered.flatMap(Self.queues(forNamespace:)) + Self.orchestrationQueues)
    }

    /// The template (namespace, name, version): from memory, else from the database (and then
    /// remembered). Nil when no such named task exists. `lane`: whose connection budget a database
    /// look-up takes (`.operator` for the REST/gRPC template queries, so that a flood of them for
    /// unknown templates cannot take the step pipeline's connections).
    public func template(
        namespace: String, name: String, version: String,
        lane: PostgresPoolLane = .pipeline
    ) async throws -> TaskTemplate? {
        let key = Key(namespace: namespace, name: name, version: version)
        if let cached = cache[key] {
            hits += 1
            cache[key]?.accessCount += 1
            return cached.template
        }
        misses += 1
        let rows = try await pool.query(
            """
            SELECT nt.configuration
            FROM tasker.named_tasks nt
            JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
            WHERE tn.name = $1 AND nt.name = $2 AND nt.version = $3
            """, [namespace, name, version], lane: lane)
        guard let row = rows.first else { return nil }
        let identifier = "\(namespace)/\(name)/\(version)"
        let configuration = try row.decode("configuration", as: JSONValue.self)
        if configuration == .null || configuration == .emptyObject {
            throw TaskTemplateRegistryError.emptyConfiguration(template: identifier)
        }
        let template: TaskTemplate
        do {
            template = try TaskTemplate.fromJSON(configuration)
        } catch {
            throw TaskTemplateRegistryError.undecodableConfiguration(template: identifier, reason: "\(error)")
        }
        cache[key] = CacheEntry(template: template, cachedAt: .now, accessCount: 1)
        return template
    }

    /// Forgets the cached copy of one template; the next lookup reads the database.
    public func invalidate(namespace: String, name: String, version: String) {
        if cache.removeValue(forKey: Key(namespace: namespace, name: name, version: version)) != nil { evictions += 1 }
    }

    /// Forgets every cached template.
    public func invalidateAll() {
        evictions += cache.count
        cache.removeAll()
    }

    // MARK: - SQL

    private func upsert(_ template: TaskTemplate) async throws {
        let configuration = try PostgresJSON(template)
        let name = template.name
        let version = template.version
        let namespace = template.namespaceName
        let description = template.description
        try await pool.transaction { connection in
            var found = try connection.query(
                "SELECT task_namespace_uuid FROM tasker.task_namespaces WHERE name = $1", [namespace])
            if found.isEmpty {
                try connection.query(
                    """
                    INSERT INTO tasker.task_namespaces (name, created_at, updated_at)
                    VALUES ($1, NOW(), NOW())
                    ON CONFLICT (name) DO NOTHING
                    """, [namespace])
                found = try connection.query(
                    "SELECT task_namespace_uuid FROM tasker.task_namespaces WHERE name = $1", [namespace])
            }
            let namespaceUUID = try found[0].decode("task_namespace_uuid", as: UUID.self)
            let updated = try connection.query(
                """
                UPDATE tasker.named_tasks
                SET description = COALESCE($4, description),
                    configuration = COALESCE($5::jsonb, configuration),
                    updated_at = NOW()
                WHERE name = $1 AND version = $2 AND task_namespace_uuid = $3
                """, [name, version, namespaceUUID, description, configuration])
            if updated.affectedRows == 0 {
                // A concurrent registration may insert the row between the UPDATE and here.
                try connection.query(
                    """
                    INSERT INTO tasker.named_tasks
                        (name, version, description, task_namespace_uuid, configuration, identity_strategy,
                         created_at, updated_at)
                    VALUES ($1, $2, $4, $3, $5::jsonb, 'strict', NOW(), NOW())
                    ON CONFLICT (task_namespace_uuid, name, version) DO UPDATE
                    SET description = COALESCE(EXCLUDED.description, tasker.named_tasks.description),
                        configuration = COALESCE(EXCLUDED.configuration, tasker.named_tasks.configuration),
                        updated_at = NOW()
                    """, [name, version, namespaceUUID, description, configuration])
            }
        }
    }

    private func createQueues(_ queues: [String]) async throws {
        try await queuePool.withConnection { connection in
            for queue in queues { try await PGMQ.create(connection, queue: queue) }
        }
        logger.debug("queues ready", metadata: ["queues": "\(queues.joined(separator: ", "))"])
    }
}
