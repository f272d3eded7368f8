import Foundation
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerPostgres
@testable import TaskerWorker

/// The worker runs under the least-privilege role of `scripts/sql/worker-role.sql` (README,
/// "Security and limits"): not a superuser, not the schemas' owner, owner of nothing. The schema
/// and the tasks are made by the owner (the test cluster's superuser), as a deployment where
/// `migrate` and the orchestration run as another role does; the namespace's queues are created by
/// the worker at start, through the owner's `tasker.create_queue`.
@Suite("Worker under the least-privilege role", .timeLimit(.minutes(2)))
struct WorkerRoleTests {
    static let yaml = """
        name: role_flow
        namespace_name: least_privilege
        version: 1.0.0
        steps:
          - name: first
            handler: { callable: tasker.echo }
          - name: second
            dependencies: [first]
            handler: { callable: tasker.noop }
        """

    /// The grant script with its psql variables replaced by the quoted role name (as psql's
    /// `-v worker_role=…` does: `:"worker_role"` an identifier, `:'worker_role'` a literal).
    static func grantScript(for role: String) throws -> String {
        let path = "\(TestEnvironment.repositoryRoot)/scripts/sql/worker-role.sql"
        return try String(contentsOfFile: path, encoding: .utf8)
            .replacingOccurrences(of: #":"worker_role""#, with: "\"\(role)\"")
            .replacingOccurrences(of: ":'worker_role'", with: "'\(role)'")
    }

    @Test("runs steps end to end with only the documented grants, and is refused anything beyond them")
    func runsWithTheDocumentedGrants() async throws {
        let role = "tasker_worker_\(UUID().uuidString.prefix(8).lowercased())"
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            try await harness.admin.execute("CREATE ROLE \"\(role)\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
            try await harness.admin.execute(try Self.grantScript(for: role))
            // The worker creates its namespace's queues at start (the harness made them as the owner).
            for queue in TaskTemplateRegistry.queues(forNamespace: harness.namespace) {
                try await harness.admin.query("SELECT pgmq.drop_queue($1::text)", [queue])
            }

            var configuration = harness.configuration()
            configuration.common.database.url = try Self.url(db.url, user: role)
            let worker = harness.startWorker(HandlerRegistry.withBuiltIns(), configuration: configuration)
            do {
                // Orchestration sends to a queue only once it exists: the worker's start creates it.
                try await waitUntil(timeout: .seconds(60)) {
                    try await harness.admin.query(
                        "SELECT to_regclass('pgmq.q_worker_least_privilege_queue') IS NOT NULL AS made")[0].decode("made", as: Bool.self)
                }
                let task = try await harness.createTask(
                    steps: ["first", "second"], edges: [("first", "second")],
                    context: .object(["who": "least privilege"]))
                try await harness.enqueue(task, "first")
                try await harness.waitForState(task["first"], ["enqueued_for_orchestration"])
                #expect(try await harness.result(task["first"]).success)
                try await harness.completeLikeOrchestration(task, "first")
                try await harness.enqueue(task, "second")
                try await harness.waitForState(task["second"], ["enqueued_for_orchestration"])
                #expect(try await harness.result(task["second"]).success)

                // The grants are really the limit: the role cannot drop or delete what it does not own.
                let asWorker = try await PostgresConnection.connect(
                    url: try Self.url(db.url, user: role),
                    applicationName: "tasker-role-test")
                await #expect(throws: PostgresError.self) {
                    try await asWorker.execute("DELETE FROM tasker.tasks")
                }
                await #expect(throws: PostgresError.self) {
                    try await asWorker.execute("DROP TABLE pgmq.q_worker_least_privilege_queue")
                }
                try await Self.expectNoEscalation(asWorker, role: role, harness: harness)
                await asWorker.close()
            } catch {
                try? await worker.stop()
                throw error
            }
            try await worker.stop()
            await harness.admin.close()
        }
        // The test database is gone, and with it the role's grants; the role itself is cluster-wide.
        let cluster = try await PostgresConnection.connect(url: try TestEnvironment.adminURL())
        try await cluster.execute("DROP ROLE IF EXISTS \"\(role)\"")
        await cluster.close()
    }

    /// The role owns nothing, and every way found to run code as another role is refused (issue
    /// #26, item 2): the queue the worker created belongs to the owner; no trigger on it, no
    /// function or operator where another role would resolve it, no schema, no owner change, no
    /// queue created by PGMQ directly, no write to PGMQ's catalog, no arbitrary name through
    /// `tasker.create_queue`, and the only SECURITY DEFINER function it may call is that one. After
    /// the attempts the owner enqueues into the queue (where a trigger would fire) and the role is
    /// still no superuser.
    static func expectNoEscalation(_ asWorker: PostgresConnection, role: String, harness: PipelineHarness) async throws {
        let owned: Int = try await asWorker.query(
            """
            SELECT (SELECT count(*) FROM pg_catalog.pg_class WHERE relowner = current_user::regrole)
                 + (SELECT count(*) FROM pg_catalog.pg_proc WHERE proowner = current_user::regrole)
                 + (SELECT count(*) FROM pg_catalog.pg_type WHERE typowner = current_user::regrole)
                 + (SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspowner = current_user::regrole
                                                                  AND nspname NOT LIKE 'pg\\_temp\\_%'
                                                                  AND nspname NOT LIKE 'pg\\_toast\\_temp\\_%') AS n
            """)[0].decode("n")
        #expect(owned == 0, "the worker role owns \(owned) objects")
        let queueOwner: String = try await asWorker.query(
            "SELECT tableowner::text AS owner FROM pg_catalog.pg_tables WHERE schemaname = 'pgmq' AND tablename = 'q_worker_least_privilege_queue'"
        )[0].decode("owner")
        #expect(queueOwner != role)

        // A trigger function where only this session sees it (TEMP is PUBLIC's), then the attack.
        try await asWorker.execute(
            """
            CREATE FUNCTION pg_temp.escalate() RETURNS trigger LANGUAGE plpgsql
            AS $$ BEGIN EXECUTE format('ALTER ROLE %I SUPERUSER', session_user); RETURN NEW; END $$
            """)
        // Each refused for lack of privilege (42501), the names by tasker.create_queue (22023).
        let refused: [(statement: String, sqlState: String)] = [
            (
                "CREATE TRIGGER escalate BEFORE INSERT ON pgmq.q_worker_least_privilege_queue FOR EACH ROW EXECUTE FUNCTION pg_temp.escalate()",
                "42501"
            ),
            ("ALTER TABLE pgmq.q_worker_least_privilege_queue OWNER TO \"\(role)\"", "42501"),
            ("CREATE FUNCTION pgmq.escalate() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$", "42501"),
            ("CREATE FUNCTION tasker.escalate() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$", "42501"),
            ("CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE sql AS $$ SELECT pg_catalog.now() $$", "42501"),
            ("CREATE OPERATOR public.= (FUNCTION = pg_catalog.uuid_eq, LEFTARG = uuid, RIGHTARG = uuid)", "42501"),
            ("CREATE TYPE public.shadow AS (a int)", "42501"),
            ("CREATE TABLE pgmq.q_planted (msg_id bigint)", "42501"),
            ("CREATE SCHEMA \"\(role)\"", "42501"),
            ("SELECT pgmq.create('worker_planted_queue')", "42501"),
            (
                "INSERT INTO pgmq.meta (queue_name, is_partitioned, is_unlogged, created_at) VALUES ('planted', false, false, now())",
                "42501"
            ),
            ("DELETE FROM pgmq.meta", "42501"),
            // The staleness sweep's election (migration 0009) is the orchestration's alone.
            ("SELECT 1 FROM tasker.maintenance_locks FOR UPDATE", "42501"),
            ("SELECT tasker.create_queue('worker_x_queue; DROP TABLE tasker.tasks')", "22023"),
            ("SELECT tasker.create_queue('planted_table')", "22023"),
        ]
        for (statement, sqlState) in refused {
            let error = await #expect(throws: PostgresError.self, "\(statement)") { try await asWorker.execute(statement) }
            #expect(error?.sqlState == sqlState, "\(statement): \(String(describing: error))")
        }
        let definers: [String] = try await asWorker.query(
            """
            SELECT p.pronamespace::regnamespace::text || '.' || p.proname AS f FROM pg_catalog.pg_proc p
             WHERE p.prosecdef AND p.pronamespace IN ('tasker'::regnamespace, 'pgmq'::regnamespace, 'public'::regnamespace)
               AND has_function_privilege(current_user, p.oid, 'EXECUTE')
             ORDER BY 1
            """
        ).map { try $0.decode("f") }
        #expect(definers == ["tasker.create_queue"])

        // Where the trigger would have fired: the owner enqueues.
        try await harness.admin.query(
            "SELECT pgmq.send('worker_least_privilege_queue', '{}'::jsonb) AS id")
        let superuser: Bool = try await harness.admin.query(
            "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1", [role])[0].decode("rolsuper")
        #expect(!superuser)
    }

    /// `url` with its user replaced (the test cluster trusts loopback connections).
    static func url(_ url: String, user: String) throws -> String {
        guard var components = URLComponents(string: url) else {
            throw TestSetupError("not a URL: \(url)")
        }
        components.user = user
        components.password = nil
        return try #require(components.string)
    }
}
