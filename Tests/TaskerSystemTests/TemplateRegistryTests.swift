import Foundation
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// `TaskTemplateRegistry` against a real database: rows, queues, upserts, reads back.
@Suite("Task templates: registry", .timeLimit(.minutes(2)))
struct TemplateRegistryTests {
    static func template(
        _ name: String = "smoke", namespace: String = "reg_ns", description: String? = "first",
        callable: String = "tasker.noop"
    ) -> TaskTemplate {
        TaskTemplate(
            name: name, namespaceName: namespace, version: "1.0.0", description: description,
            steps: [
                StepDefinition(name: "one", handler: HandlerDefinition(callable: callable)),
                StepDefinition(name: "two", handler: HandlerDefinition(callable: "tasker.echo"), dependencies: ["one"]),
            ])
    }

    static func withRegistry(
        _ body: (TestDatabase, PostgresConnectionPool, TaskTemplateRegistry) async throws -> Void
    )
        async throws
    {
        try await withTestDatabase { db in
            let pool = db.pool()
            do {
                try await body(db, pool, TaskTemplateRegistry(pool: pool))
            } catch {
                await pool.close()
                throw error
            }
            await pool.close()
        }
    }

    @Test func registrationCreatesNamespaceNamedTaskAndQueues() async throws {
        try await Self.withRegistry { db, pool, registry in
            let template = Self.template()
            try await registry.register([template, Self.template("other", namespace: "second_ns")])
            #expect(await registry.supportedNamespaces == ["reg_ns", "second_ns"])

            let c = try await db.connect()
            let rows = try await c.query(
                """
                SELECT tn.name AS ns, nt.name, nt.version, nt.description, nt.identity_strategy::text AS strategy,
                       nt.configuration
                FROM tasker.named_tasks nt JOIN tasker.task_namespaces tn USING (task_namespace_uuid)
                ORDER BY tn.name
                """)
            #expect(rows.count == 2)
            #expect(try rows[0].decode("ns", as: String.self) == "reg_ns")
            #expect(try rows[0].decode("name", as: String.self) == "smoke")
            #expect(try rows[0].decode("version", as: String.self) == "1.0.0")
            #expect(try rows[0].decode("description", as: String.self) == "first")
            #expect(try rows[0].decode("strategy", as: String.self) == "strict")
            let configuration = try rows[0].decode("configuration", as: JSONValue.self)
            #expect(configuration == (try template.jsonValue()))
            #expect(configuration["steps"]?["x"] == nil)

            let queues = Set(
                try await c.query("SELECT queue_name FROM pgmq.list_queues()")
                    .map { try $0.decode("queue_name", as: String.self) })
            let expected: Set<String> = [
                "worker_reg_ns_queue", "reg_ns_domain_events", "reg_ns_domain_events_dlq",
                "worker_second_ns_queue", "second_ns_domain_events", "second_ns_domain_events_dlq",
                "orchestration_step_results", "orchestration_task_requests", "orchestration_task_finalizations",
            ]
            #expect(expected.isSubset(of: queues), "missing \(expected.subtracting(queues))")
            _ = pool
        }
    }

    @Test func cacheStatisticsCountHitsMissesAndEvictions() async throws {
        try await Self.withRegistry { _, _, registry in
            try await registry.register([Self.template(), Self.template("other")])
            var stats = await registry.cacheStatistics
            #expect(stats.entries == 2 && stats.hits == 0 && stats.misses == 0 && stats.evictions == 0)
            for _ in 0..<3 { _ = try await registry.template(namespace: "reg_ns", name: "smoke", version: "1.0.0") }
            await registry.invalidate(namespace: "reg_ns", name: "other", version: "1.0.0")
            _ = try await registry.template(namespace: "reg_ns", name: "other", version: "1.0.0")  // read back: a miss
            _ = try await registry.template(namespace: "reg_ns", name: "absent", version: "1.0.0")  // a miss, nothing cached
            stats = await registry.cacheStatistics
            #expect(stats.entries == 2)
            #expect(stats.hits == 3)
            #expect(stats.misses == 2)
            #expect(stats.evictions == 1)
            #expect(stats.averageAccessCount == 2)  // smoke: 3, other: 1
            await registry.invalidateAll()
            #expect(await registry.cacheStatistics.evictions == 3)
            #expect(await registry.cacheStatistics.oldestEntryAge == .zero)
        }
    }

    @Test func registeringTwiceUpdatesInsteadOfDuplicating() async throws {
        try await Self.withRegistry { db, _, registry in
            try await registry.register([Self.template()])
            let c = try await db.connect()
            let before = try await c.query("SELECT named_task_uuid, updated_at FROM tasker.named_tasks")[0]
            // A new description and handler; then nil description keeps the stored one (COALESCE).
            try await registry.register([Self.template(description: "second", callable: "tasker.sleep")])
            try await registry.register([Self.template(description: nil, callable: "tasker.sleep")])
            let rows = try await c.query("SELECT named_task_uuid, description, configuration FROM tasker.named_tasks")
            #expect(rows.count == 1)
            #expect(try rows[0].decode("named_task_uuid", as: UUID.self) == before.decode("named_task_uuid", as: UUID.self))
            #expect(try rows[0].decode("description", as: String.self) == "second")
            let stored = try TaskTemplate.fromJSON(rows[0].decode("configuration", as: JSONValue.self))
            #expect(stored.steps[0].handler.callable == "tasker.sleep")
            let namespaces = try await c.query("SELECT count(*)::int AS n FROM tasker.task_namespaces")
            #expect(try namespaces[0].decode("n", as: Int.self) == 1)
        }
    }

    @Test func readsATemplateRegisteredByAnotherWorker() async throws {
        try await Self.withRegistry { _, pool, registry in
            let template = Self.template()
            try await registry.register([template])
            let other = TaskTemplateRegistry(pool: pool)
            #expect(try await other.template(namespace: "reg_ns", name: "smoke", version: "1.0.0") == template)
            #expect(try await other.template(namespace: "reg_ns", name: "smoke", version: "9.9.9") == nil)
            #expect(try await other.template(namespace: "nowhere", name: "smoke", version: "1.0.0") == nil)
            #expect(await other.supportedNamespaces.isEmpty)

            // Cached until invalidated.
            let changed = Self.template(callable: "tasker.sleep")
            try await registry.register([changed])
            #expect(try await other.template(namespace: "reg_ns", name: "smoke", version: "1.0.0") == template)
            await other.invalidate(namespace: "reg_ns", name: "smoke", version: "1.0.0")
            #expect(try await other.template(namespace: "reg_ns", name: "smoke", version: "1.0.0") == changed)
        }
    }

    @Test func anEmptyConfigurationIsAClearError() async throws {
        try await Self.withRegistry { db, pool, _ in
            let c = try await db.connect()
            try await c.query(
                """
                WITH ns AS (INSERT INTO tasker.task_namespaces (name, created_at, updated_at)
                            VALUES ('legacy', NOW(), NOW()) RETURNING task_namespace_uuid)
                INSERT INTO tasker.named_tasks (task_namespace_uuid, name, version, configuration, created_at, updated_at)
                SELECT task_namespace_uuid, 'empty', '1.0.0', '{}'::jsonb, NOW(), NOW() FROM ns
                UNION ALL
                SELECT task_namespace_uuid, 'null', '1.0.0', NULL, NOW(), NOW() FROM ns
                UNION ALL
                SELECT task_namespace_uuid, 'junk', '1.0.0', '{"name": 1}'::jsonb, NOW(), NOW() FROM ns
                """)
            let registry = TaskTemplateRegistry(pool: pool)
            for name in ["empty", "null"] {
                do {
                    _ = try await registry.template(namespace: "legacy", name: name, version: "1.0.0")
                    Issue.record("no error for \(name)")
                } catch let error as TaskTemplateRegistryError {
                    #expect("\(error)".contains("legacy/\(name)/1.0.0"))
                    #expect("\(error)".contains("empty configuration"))
                }
            }
            await #expect(throws: TaskTemplateRegistryError.self) {
                _ = try await registry.template(namespace: "legacy", name: "junk", version: "1.0.0")
            }
        }
    }

    @Test func invalidTemplatesAreRefusedBeforeAnyWrite() async throws {
        try await Self.withRegistry { db, _, registry in
            var bad = Self.template("bad")
            bad.steps[1].dependencies = ["missing"]
            await #expect(throws: TaskTemplateRegistryError.self) {
                try await registry.register([Self.template(), bad])
            }
            let c = try await db.connect()
            let rows = try await c.query("SELECT count(*)::int AS n FROM tasker.named_tasks")
            #expect(try rows[0].decode("n", as: Int.self) == 0)
        }
    }

    @Test func bootFlowRegistersTheDiagnosticsTemplate() async throws {
        try await Self.withRegistry { _, _, registry in
            let report = TaskTemplateLoader(environment: [:], workingDirectory: TestEnvironment.repositoryRoot).loadAll()
            try await registry.register(report.templates.map(\.template))
            #expect(await registry.supportedNamespaces.contains("diagnostics"))
            let smoke = try await registry.template(namespace: "diagnostics", name: "smoke_test", version: "1.0.0")
            #expect(smoke?.steps.count == 3)
        }
    }

    /// A database that was never migrated: registration says so and names the command that fixes it,
    /// instead of the server's bare "relation … does not exist".
    @Test func anUnmigratedDatabaseGetsAHintToRunMigrate() async throws {
        try await withEmptyTestDatabase { db in
            let pool = db.pool()
            let error = await #expect(throws: TaskTemplateRegistryError.self) {
                try await TaskTemplateRegistry(pool: pool).register([Self.template()])
            }
            await pool.close()
            guard case .schemaMissing(let missing) = error else {
                Issue.record("expected schemaMissing, got \(String(describing: error))")
                return
            }
            #expect(missing.contains("does not exist"))
            #expect("\(error!)".contains("tasker-worker migrate"))
        }
    }
}
