import Foundation
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// The Tasker schema and PGMQ as our migrations leave them, exercised the way orchestration and
/// workers use them.
@Suite("Tasker schema and PGMQ", .timeLimit(.minutes(2)))
struct SchemaTests {
    /// Creates namespace `demo`, task `linear`, steps `step_a` → `step_b`, both `pending`;
    /// returns (task, step a, step b).
    static func seedTask(_ c: PostgresConnection) async throws -> (task: UUID, a: UUID, b: UUID) {
        let row = try await c.query(
            """
            WITH ns AS (
              INSERT INTO tasker.task_namespaces (name, created_at, updated_at) VALUES ('demo', NOW(), NOW())
              RETURNING task_namespace_uuid),
            nt AS (
              INSERT INTO tasker.named_tasks (task_namespace_uuid, name, version, configuration, created_at, updated_at)
              SELECT task_namespace_uuid, 'linear', '1.0.0', '{}'::jsonb, NOW(), NOW() FROM ns
              RETURNING named_task_uuid),
            t AS (
              INSERT INTO tasker.tasks (named_task_uuid, requested_at, identity_hash, correlation_id, context, created_at, updated_at)
              SELECT named_task_uuid, NOW(), md5(random()::text), $1, '{"n": 1}'::jsonb, NOW(), NOW() FROM nt
              RETURNING task_uuid),
            s AS (
              INSERT INTO tasker.named_steps (name, created_at, updated_at)
              VALUES ('step_a', NOW(), NOW()), ('step_b', NOW(), NOW()) RETURNING named_step_uuid, name),
            ws AS (
              INSERT INTO tasker.workflow_steps (task_uuid, named_step_uuid, created_at, updated_at)
              SELECT t.task_uuid, s.named_step_uuid, NOW(), NOW() FROM t, s
              RETURNING workflow_step_uuid, named_step_uuid)
            SELECT (SELECT task_uuid FROM t) AS task,
                   (SELECT workflow_step_uuid FROM ws JOIN s USING (named_step_uuid) WHERE s.name = 'step_a') AS a,
                   (SELECT workflow_step_uuid FROM ws JOIN s USING (named_step_uuid) WHERE s.name = 'step_b') AS b
            """, [UUID()])[0]
        let ids = (
            task: try row.decode("task", as: UUID.self), a: try row.decode("a", as: UUID.self),
            b: try row.decode("b", as: UUID.self)
        )
        try await c.query(
            """
            INSERT INTO tasker.workflow_step_edges (from_step_uuid, to_step_uuid, name, created_at, updated_at)
            VALUES ($1, $2, 'provides', NOW(), NOW())
            """, [ids.a, ids.b])
        try await c.query(
            """
            INSERT INTO tasker.task_transitions (task_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
            VALUES ($1, 'pending', NULL, '{}'::jsonb, 1, true, NOW(), NOW())
            """, [ids.task])
        for step in [ids.a, ids.b] {
            try await c.query(
                """
                INSERT INTO tasker.workflow_step_transitions (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
                VALUES ($1, 'pending', NULL, '{}'::jsonb, 1, true, NOW(), NOW())
                """, [step])
        }
        return ids
    }

    /// The 3-statement transition write of the reference (§3.0), in one transaction.
    static func transition(_ c: PostgresConnection, step: UUID, from: String, to: String, metadata: String = "{}") async throws {
        try await c.transaction { c in
            let sortKey: Int = try c.query(
                """
                SELECT COALESCE(MAX(sort_key), 0) + 1 AS k FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1
                """, [step])[0].decode("k")
            try c.query(
                """
                UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
                WHERE workflow_step_uuid = $1 AND most_recent
                """, [step])
            try c.query(
                """
                INSERT INTO tasker.workflow_step_transitions (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
                VALUES ($1, $2, $3, $4::jsonb, $5, true, NOW(), NOW())
                """, [step, to, from, PostgresJSON(raw: metadata), sortKey])
        }
    }

    @Test func migrationsApplyOnceAndASecondRunAppliesNothing() async throws {
        try await withEmptyTestDatabase { db in
            let migrator = Migrator(
                databaseURL: db.url, migrationsDirectory: TestEnvironment.migrationsDirectory,
                pgmqScript: TestEnvironment.pgmqScript, pgmqSearchPaths: TestEnvironment.pgmqSearchPaths)
            let files = try migrator.migrationFiles()
            let first = try await migrator.run()
            #expect(first.applied == files)
            #expect(first.pgmq != .alreadyInstalled)
            let second = try await migrator.run()
            #expect(second.applied.isEmpty)
            #expect(second.alreadyApplied == files)
            #expect(second.pgmq == .alreadyInstalled)
            #expect(second.changedSinceApplied.isEmpty)
        }
    }

    /// A role that may create in schema `public` (PUBLIC may before PostgreSQL 15) creates the
    /// migrations ledger first, with a trigger making it superuser on the first write: `migrate`
    /// (as a superuser) refuses, naming the owner, and migrates and writes nothing.
    @Test func migrateRefusesALedgerAnotherRoleCreated() async throws {
        try await withEmptyTestDatabase { db in
            let admin = try await db.connect()
            try await LivenessAttackTests.withAttacker(db) { attacker in
                let role: String = try await attacker.query("SELECT current_user::text AS me")[0].decode("me")
                try await admin.execute("GRANT CREATE ON SCHEMA public TO \"\(role)\"")
                try await attacker.execute(
                    """
                    CREATE TABLE public.tasker_worker_migrations (
                        filename text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
                    CREATE FUNCTION public.escalate() RETURNS trigger LANGUAGE plpgsql
                        AS $$ BEGIN EXECUTE format('ALTER ROLE %I SUPERUSER', '\(role)'); RETURN NEW; END $$;
                    CREATE TRIGGER escalate BEFORE INSERT ON public.tasker_worker_migrations
                        FOR EACH ROW EXECUTE FUNCTION public.escalate();
                    """)
                let migrator = Migrator(
                    databaseURL: db.url, migrationsDirectory: TestEnvironment.migrationsDirectory,
                    pgmqScript: TestEnvironment.pgmqScript, pgmqSearchPaths: TestEnvironment.pgmqSearchPaths)
                let error = await #expect(throws: MigrationError.self) { try await migrator.run() }
                #expect(error?.description.contains("owned by role \(role)") == true, "\(String(describing: error))")
                let state = try await admin.query(
                    """
                    SELECT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1) AS superuser,
                           to_regclass('tasker.tasks') IS NULL AND to_regclass('pgmq.meta') IS NULL AS untouched,
                           (SELECT count(*)::int FROM public.tasker_worker_migrations) AS ledger_rows
                    """, [role])[0]
                #expect(try state.decode("superuser", as: Bool.self) == false)
                #expect(try state.decode("untouched", as: Bool.self))
                #expect(try state.decode("ledger_rows", as: Int.self) == 0)
                try await admin.execute(
                    "DROP TABLE public.tasker_worker_migrations; DROP FUNCTION public.escalate(); "
                        + "REVOKE CREATE ON SCHEMA public FROM \"\(role)\"")
            }
            await admin.close()
        }
    }

    /// Concurrent runs wait for each other on the ledger's lock, which a role that can merely
    /// connect can neither take nor hold: holding the advisory key of earlier versions changes
    /// nothing, and two runs at once on an empty database apply each file once.
    @Test func concurrentMigrationsSerialiseOnALockNoConnectOnlyRoleCanHold() async throws {
        try await withEmptyTestDatabase { db in
            try await LivenessAttackTests.withAttacker(db) { attacker in
                try await attacker.query("SELECT pg_advisory_lock(7263541004201)")
                let migrator = Migrator(
                    databaseURL: db.url, migrationsDirectory: TestEnvironment.migrationsDirectory,
                    pgmqScript: TestEnvironment.pgmqScript, pgmqSearchPaths: TestEnvironment.pgmqSearchPaths)
                async let first = migrator.run()
                async let second = migrator.run()
                let reports = try await [first, second]
                let files = try migrator.migrationFiles()
                #expect(reports.flatMap(\.applied).sorted() == files, "each file applied once")
                #expect(reports.allSatisfy { ($0.applied + $0.alreadyApplied).sorted() == files })
                let error = await #expect(throws: PostgresError.self) {
                    try await attacker.execute("BEGIN; LOCK TABLE public.tasker_worker_migrations IN SHARE UPDATE EXCLUSIVE MODE")
                }
                #expect(error?.sqlState == "42501", "\(String(describing: error))")
                _ = try? await attacker.execute("ROLLBACK")
            }
        }
    }

    @Test func migrateWithoutPGMQAvailableExplainsWhatIsMissing() async throws {
        try await withEmptyTestDatabase { db in
            let migrator = Migrator(
                databaseURL: db.url, migrationsDirectory: TestEnvironment.migrationsDirectory,
                pgmqScript: nil, pgmqSearchPaths: ["/nowhere/pgmq.sql"])
            let error = await #expect(throws: MigrationError.self) { try await migrator.run() }
            #expect(error?.description.contains("/nowhere/pgmq.sql") == true)
            #expect(error?.description.contains("pgmq==1.1.4") == true)
        }
    }

    @Test func schemaHasTheUpstreamTablesStatesAndIndexes() async throws {
        try await withTestDatabase { db in
            let c = try await db.connect()
            let tables = try await c.query(
                """
                SELECT table_name FROM information_schema.tables WHERE table_schema = 'tasker' AND table_type = 'BASE TABLE'
                """
            ).map { try $0.decode("table_name", as: String.self) }
            for table in [
                "task_namespaces", "named_tasks", "named_steps", "named_tasks_named_steps", "tasks",
                "workflow_steps", "workflow_step_edges", "task_transitions", "workflow_step_transitions",
                "workflow_step_result_audit", "tasks_dlq",
            ] {
                #expect(tables.contains(table), "missing table \(table)")
            }
            let indexes = try await c.query(
                """
                SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'tasker' AND indexdef LIKE '%most_recent%'
                  AND indexdef LIKE 'CREATE UNIQUE%'
                """
            ).map { try $0.decode("indexname", as: String.self) }
            #expect(indexes.contains("idx_workflow_step_transitions_uuid_most_recent"))
            #expect(indexes.count == 2)
            let seeded = try await Self.seedTask(c)
            let bad = await #expect(throws: PostgresError.self) {
                try await Self.transition(c, step: seeded.a, from: "pending", to: "running")
            }
            #expect(bad?.sqlState == "23514")  // CHECK over the 10 step states
            let uuids = try await c.query(
                "SELECT count(DISTINCT u) AS n FROM (SELECT uuid_generate_v7() AS u FROM generate_series(1, 500)) s")
            #expect(try uuids[0].decode("n", as: Int.self) == 500)
        }
    }

    @Test func sendWithNotifyEmitsTheUpstreamPayloads() async throws {
        try await withTestDatabase { db in
            let listener = try await db.connect()
            try await listener.listen("pgmq_message_ready.demo")
            try await listener.listen("pgmq_message_ready")
            try await listener.listen("pgmq_queue_created")
            let c = try await db.connect()
            try await c.query("SELECT pgmq.create($1::text)", ["worker_demo_queue"])
            let created = try await Self.collect(listener, count: 1)
            #expect(created[0].channel == "pgmq_queue_created")
            #expect(try Self.json(created[0])["namespace"] as? String == "demo")

            let message =
                #"{"task_uuid":"0190a1b2-0000-7000-8000-000000000001","step_uuid":"0190a1b2-0000-7000-8000-000000000002","correlation_id":"0190a1b2-0000-7000-8000-000000000003"}"#
            let msgID: Int64 = try await c.query(
                "SELECT pgmq_send_with_notify($1, $2::jsonb, $3) AS id",
                ["worker_demo_queue", PostgresJSON(raw: message), Int32(0)])[0].decode("id")
            let small = try await Self.collect(listener, count: 2)
            #expect(Set(small.map(\.channel)) == ["pgmq_message_ready.demo", "pgmq_message_ready"])
            let payload = try Self.json(small[0])
            #expect(payload["event_type"] as? String == "message_with_payload")
            #expect((payload["msg_id"] as? NSNumber)?.int64Value == msgID)
            #expect(payload["queue_name"] as? String == "worker_demo_queue")
            #expect((payload["message"] as? [String: Any])?["step_uuid"] as? String == "0190a1b2-0000-7000-8000-000000000002")

            let big = "{\"blob\": \"" + String(repeating: "x", count: 7100) + "\"}"
            try await c.query("SELECT pgmq_send_with_notify($1, $2::jsonb, 0)", ["worker_demo_queue", PostgresJSON(raw: big)])
            let bigPayload = try Self.json(try await Self.collect(listener, count: 2)[0])
            #expect(bigPayload["event_type"] as? String == "message_ready")
            #expect(bigPayload["payload_omitted"] as? Bool == true)
            #expect(bigPayload["message"] == nil)

            try await c.query(
                "SELECT pgmq_send_batch_with_notify($1, ARRAY[$2::jsonb, $2::jsonb], 0)",
                ["worker_demo_queue", PostgresJSON(raw: message)])
            let batch = try Self.json(try await Self.collect(listener, count: 2)[0])
            #expect(batch["event_type"] as? String == "batch_ready")
            #expect((batch["msg_ids"] as? [Any])?.count == 2)
            #expect((batch["message_count"] as? NSNumber)?.intValue == 2)

            // A signal-only message is read by id exactly once.
            let first = try await c.query(
                "SELECT msg_id, message FROM pgmq_read_specific_message($1, $2, 30)",
                ["worker_demo_queue", msgID])
            #expect(first.count == 1)
            let second = try await c.query(
                "SELECT msg_id FROM pgmq_read_specific_message($1, $2, 30)",
                ["worker_demo_queue", msgID])
            #expect(second.isEmpty)
            #expect(
                try await c.query("SELECT extract_queue_namespace('worker_my_ns_queue') AS ns")[0].decode("ns", as: String.self) == "my_ns")
        }
    }

    @Test func concurrentClaimsLoseWithAUniqueViolationOnTheMostRecentIndex() async throws {
        try await withTestDatabase { db in
            let setup = try await db.connect()
            let ids = try await Self.seedTask(setup)
            try await Self.transition(setup, step: ids.a, from: "pending", to: "enqueued")
            let winner = try await db.connect()
            let loser = try await db.connect()
            try await winner.execute("BEGIN")
            try await winner.query(
                "UPDATE tasker.workflow_step_transitions SET most_recent = false WHERE workflow_step_uuid = $1 AND most_recent", [ids.a])
            try await winner.query(
                """
                INSERT INTO tasker.workflow_step_transitions (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
                VALUES ($1, 'in_progress', 'enqueued', '{}', 3, true, NOW(), NOW())
                """, [ids.a])
            // The loser's INSERT blocks on the winner's uncommitted row, then fails after COMMIT.
            let lost = Task { try await Self.transition(loser, step: ids.a, from: "enqueued", to: "in_progress") }
            try await Task.sleep(for: .milliseconds(200))
            try await winner.execute("COMMIT")
            let error = await #expect(throws: PostgresError.self) { try await lost.value }
            #expect(error?.isUniqueViolation == true)
            #expect(error?.constraint == "idx_workflow_step_transitions_uuid_most_recent")
        }
    }

    @Test func resultAuditRecordsSuccessAndExecutionTimeFromTheEventData() async throws {
        try await withTestDatabase { db in
            let c = try await db.connect()
            let ids = try await Self.seedTask(c)
            try await Self.transition(c, step: ids.a, from: "pending", to: "enqueued")
            try await Self.transition(c, step: ids.a, from: "enqueued", to: "in_progress")
            let worker = UUID()
            let correlation = UUID()
            let event =
                #"{"type":"EnqueueForOrchestration","data":{"step_uuid":"\#(ids.a.uuidString.lowercased())","success":true,"result":{},"metadata":{"execution_time_ms":42,"retryable":false}}}"#
            let metadata = try JSONSerialization.data(withJSONObject: [
                "event": event, "timestamp": "2026-11-23T19:00:00Z",
                "worker_uuid": worker.uuidString.lowercased(), "correlation_id": correlation.uuidString.lowercased(),
            ])
            try await Self.transition(
                c, step: ids.a, from: "in_progress", to: "enqueued_for_orchestration",
                metadata: String(decoding: metadata, as: UTF8.self))
            let audit = try await c.query("SELECT * FROM tasker.workflow_step_result_audit WHERE workflow_step_uuid = $1", [ids.a])
            #expect(audit.count == 1)
            #expect(try audit[0].decode("success", as: Bool.self))
            #expect(try audit[0].decode("execution_time_ms", as: Int?.self) == 42)
            #expect(try audit[0].decode("worker_uuid", as: UUID?.self) == worker)
            #expect(try audit[0].decode("correlation_id", as: UUID?.self) == correlation)
        }
    }

    @Test func readinessAndExecutionContextFollowTheDAG() async throws {
        try await withTestDatabase { db in
            let c = try await db.connect()
            let ids = try await Self.seedTask(c)
            let readiness = try await c.query(
                "SELECT workflow_step_uuid, ready_for_execution FROM get_step_readiness_status($1)", [ids.task])
            var ready: [UUID: Bool] = [:]
            for row in readiness { ready[try row.decode("workflow_step_uuid")] = try row.decode("ready_for_execution", as: Bool.self) }
            #expect(ready == [ids.a: true, ids.b: false])
            let context = try await c.query(
                "SELECT execution_status, ready_steps, total_steps FROM get_task_execution_context($1)", [ids.task])
            #expect(try context[0].decode("execution_status", as: String.self) == "has_ready_steps")
            #expect(try context[0].decode("ready_steps", as: Int.self) == 1)
            let moved: Bool = try await c.query(
                "SELECT transition_task_state_atomic($1, 'pending', 'initializing', $2, '{}'::jsonb) AS ok", [ids.task, UUID()])[0].decode(
                    "ok")
            #expect(moved)
            let again: Bool = try await c.query(
                "SELECT transition_task_state_atomic($1, 'pending', 'initializing', $2, '{}'::jsonb) AS ok", [ids.task, UUID()])[0].decode(
                    "ok")
            #expect(!again)
        }
    }

    static func collect(_ listener: PostgresConnection, count: Int) async throws -> [PostgresNotification] {
        var notes: [PostgresNotification] = []
        let deadline = ContinuousClock.now.advanced(by: .seconds(5))
        while notes.count < count, ContinuousClock.now < deadline {
            notes += try await listener.waitForNotifications(timeout: .seconds(1))
        }
        #expect(notes.count == count)
        return notes
    }

    static func json(_ note: PostgresNotification) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(note.payload.utf8)) as? [String: Any] ?? [:]
    }
}
