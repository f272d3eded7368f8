import Foundation
import TaskerOrchestration
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Workers behind a real PgBouncer in transaction mode (issue #29, item 1): with
/// `common.database.transaction_pooler = true` they claim, run and store steps through it (statements
/// unnamed: two workers share two server sessions), with LISTEN on a direct `listen_url` or none at
/// all (polling); crash recovery scans and recovers through it; a claim whose answer was lost and
/// that committed after the lookup is found and retired (`OrphanedClaimAudit`); wrong session
/// settings of the role are refused at start, naming the statements that fix them.
@Suite("Workers through a transaction-mode pooler", .serialized, .timeLimit(.minutes(4)))
struct PoolerWorkerTests {
    static let yaml = """
        name: pooled_chain
        namespace_name: examples
        version: 1.0.0
        steps:
          - name: pooled_first
            handler: { callable: tasker.echo }
          - name: pooled_second
            dependencies: [pooled_first]
            handler: { callable: tasker.echo }
        """

    static let gatedYAML = """
        name: pooled_gated
        namespace_name: examples
        version: 1.0.0
        steps:
          - name: pooled_gate
            handler: { callable: test.gate }
        """

    /// What a transaction pooler's server sessions need from the database (`PostgresSessionCheck`).
    static func giveSessionDefaults(_ admin: PostgresConnection) async throws {
        try await admin.execute(
            """
            DO $$ BEGIN
              EXECUTE format('ALTER DATABASE %I SET search_path = tasker, public', current_database());
              EXECUTE format('ALTER DATABASE %I SET TimeZone = %L', current_database(), 'UTC');
              EXECUTE format('ALTER DATABASE %I SET DateStyle = %L', current_database(), 'ISO, MDY');
            END $$
            """)
    }

    static func pooled(
        _ harness: OrchestrationHarness, through bouncer: PgBouncer, listen: Bool
    ) -> TaskerConfiguration {
        var configuration = harness.workerConfiguration()
        configuration.common.database.url = bouncer.url
        configuration.common.database.transactionPooler = true
        configuration.common.database.listenUrl = listen ? harness.db.url : ""
        return configuration
    }

    /// LISTEN sessions on the test database (the orchestration's and the workers').
    static func listenSessions(_ harness: OrchestrationHarness) async throws -> Int {
        try await harness.admin.query(
            """
            SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND application_name = 'tasker-worker-listener'
            """)[0].decode("n")
    }

    static func start(
        _ harness: OrchestrationHarness, _ configuration: TaskerConfiguration,
        handlers: HandlerRegistry = OrchestrationHarness.exampleHandlers()
    ) -> PipelineHarness.RunningWorker {
        let daemon = WorkerDaemon(
            configuration: configuration, handlers: handlers,
            templateLoader: TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": harness.templateDirectory]))
        return PipelineHarness.RunningWorker(daemon: daemon, task: Task { try await daemon.run() })
    }

    /// The route itself: two clients of one PgBouncer server session. Connected as `direct`, the
    /// second client's PREPARE of the same statement finds the first's in the shared session and
    /// fails (42P05), as would an EXECUTE landing in a session without it; as `transactionPooler`,
    /// every statement and pipeline is sent unnamed and both clients run them as often as they like.
    @Test func statementsAreSentUnnamedThroughATransactionPooler() async throws {
        try await withTestDatabase { db in
            try await PgBouncer.with(databaseURL: db.url, serverConnections: 1) { bouncer in
                let statement = PreparedStatement("SELECT $1::int + 1 AS n")
                let first = try await PostgresConnection.connect(url: bouncer.url, route: .direct)
                let second = try await PostgresConnection.connect(url: bouncer.url, route: .direct)
                #expect(try await first.query(statement, [1])[0].decode("n", as: Int.self) == 2)
                await #expect(throws: PostgresError.self) { try await second.query(statement, [1]) }
                await first.close()
                await second.close()

                let a = try await PostgresConnection.connect(url: bouncer.url, route: .transactionPooler)
                let b = try await PostgresConnection.connect(url: bouncer.url, route: .transactionPooler)
                for n in 0..<3 {
                    #expect(try await a.query(statement, [n])[0].decode("n", as: Int.self) == n + 1)
                    #expect(try await b.query(statement, [n])[0].decode("n", as: Int.self) == n + 1)
                    let results = try await b.pipeline([
                        .plain("BEGIN"), .prepared(statement, [n]), .prepared(statement, [n + 1]), .plain("COMMIT"),
                    ])
                    #expect(try results[1][0].decode("n", as: Int.self) == n + 1)
                    #expect(try results[2][0].decode("n", as: Int.self) == n + 2)
                }
                await a.close()
                await b.close()
            }
        }
    }

    @Test func workersThroughPgBouncerRunTasksWithAndWithoutListen() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db, extra: ["pooled.yaml": Self.yaml])
            try await Self.giveSessionDefaults(harness.admin)
            try await PgBouncer.with(databaseURL: db.url, serverConnections: 2) { bouncer in
                let orchestration = harness.startOrchestration()
                // The orchestration's own LISTEN session (direct), before any worker's.
                try await waitUntil(timeout: .seconds(20)) { try await Self.listenSessions(harness) == 1 }
                // Two workers (pools of up to 8 each) through two server sessions: named prepared
                // statements would be missing in the session the next transaction lands in.
                let polling = Self.start(harness, Self.pooled(harness, through: bouncer, listen: false))
                let listening = Self.start(harness, Self.pooled(harness, through: bouncer, listen: true))
                var tasks: [UUID] = []
                for n in 0..<6 {
                    tasks.append(
                        try await orchestration.submit(OrchestrationHarness.request("pooled_chain", ["n": .int(Int64(n))])).taskUUID)
                }
                for task in tasks { #expect(try await harness.waitForTask(task, in: ["complete", "error"]) == "complete") }

                // Without a listen_url the worker polls (no LISTEN through the pooler); with one,
                // it listens on that direct session.
                let pollingStatus = polling.daemon.runtime.eventSystem.status
                #expect(pollingStatus.mode == .pollingOnly && pollingStatus.listenerState == nil)
                try await waitUntil(timeout: .seconds(20)) {
                    listening.daemon.runtime.eventSystem.status.listenerState?.isConnected ?? false
                }
                #expect(listening.daemon.runtime.eventSystem.status.mode == .hybrid)
                // One more direct LISTEN session: the listening worker's; none of the polling one.
                #expect(try await Self.listenSessions(harness) == 2)
                try await polling.stop()
                try await listening.stop()
                try await orchestration.stop()
            }
        }
    }

    @Test func wrongSessionSettingsAndAnUndeclaredPoolerAreRefusedAtStart() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db, extra: ["pooled.yaml": Self.yaml])
            try await harness.admin.execute(
                "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET search_path = public', current_database()); END $$")
            try await PgBouncer.with(databaseURL: db.url, serverConnections: 1) { bouncer in
                let worker = Self.start(harness, Self.pooled(harness, through: bouncer, listen: false))
                do {
                    try await worker.task.value
                    Issue.record("a worker whose sessions lack search_path = tasker started")
                } catch let error as PostgresError {
                    #expect(error.message.contains("search_path = tasker, public"), "\(error)")
                    #expect(error.message.contains("ALTER ROLE"), "\(error)")
                }
                // The same URL without transaction_pooler: the lease renewal sees the pooler.
                try await Self.giveSessionDefaults(harness.admin)
                var undeclared = Self.pooled(harness, through: bouncer, listen: false)
                undeclared.common.database.transactionPooler = false
                let refused = Self.start(harness, undeclared)
                do {
                    try await refused.task.value
                    Issue.record("a worker not told about the pooler started behind it")
                } catch let error as SessionPoolerError {
                    #expect(error.description.contains("transaction_pooler = true"))
                }
            }
        }
    }

    /// A dead worker's step (its lease gone) is recovered by a worker that reaches the database only
    /// through the pooler: the election, the scan and the recovery write all run unnamed in shared
    /// server sessions, and the task completes.
    @Test func crashRecoveryWorksThroughThePooler() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db, extra: ["pooled.yaml": Self.yaml])
            try await Self.giveSessionDefaults(harness.admin)
            try await PgBouncer.with(databaseURL: db.url, serverConnections: 1) { bouncer in
                let orchestration = harness.startOrchestration()
                let task = try await orchestration.submit(OrchestrationHarness.request("pooled_chain", ["n": .int(1)])).taskUUID
                let step = try await Self.firstStep(of: task, harness)
                // A worker that claimed the step and died: its claim stands, its lease is gone.
                let dead = UUID.v7()
                try await WorkerLeaseRepository.renew(harness.admin, worker: dead, hostname: "dead", duration: .seconds(600))
                let claim = try await Self.claim(step, of: task, stamp: ClaimStamp(worker: dead), harness)
                #expect(claim == 1)
                try await WorkerLeaseRepository.release(harness.admin, worker: dead)

                let rescuer = Self.start(harness, Self.pooled(harness, through: bouncer, listen: false))
                #expect(try await harness.waitForTask(task, in: ["complete", "error"]) == "complete")
                try await waitUntil { rescuer.daemon.statistics.snapshot.stepsRecovered >= 1 }
                #expect(rescuer.daemon.statistics.snapshot.stepsRecovered == 1)
                #expect(rescuer.daemon.statistics.snapshot.recoveryScans >= 1)
                try await rescuer.stop()
                try await orchestration.stop()
            }
        }
    }

    /// The only step of `task` (its first, once enqueued).
    static func firstStep(of task: UUID, _ harness: OrchestrationHarness) async throws -> UUID {
        var step: UUID?
        try await waitUntil {
            step = try await harness.admin.query(
                """
                SELECT ws.workflow_step_uuid AS s FROM tasker.workflow_steps ws
                  JOIN tasker.workflow_step_transitions wst USING (workflow_step_uuid)
                 WHERE ws.task_uuid = $1 AND wst.most_recent AND wst.to_state = 'enqueued'
                """, [task]
            ).first?.decode("s")
            return step != nil
        }
        return try #require(step)
    }

    /// Claims `step` with `stamp` as the worker's claim statement does (its queue message archived);
    /// the step's attempts, nil when not claimed.
    static func claim(_ step: UUID, of task: UUID, stamp: ClaimStamp, _ harness: OrchestrationHarness) async throws -> Int? {
        let queue = QueueNames.workerQueue(namespace: "examples")
        let msgID: Int64 = try await harness.admin.query(
            "SELECT max(msg_id) AS id FROM pgmq.q_\(queue) WHERE (message->>'step_uuid')::uuid = $1", [step])[0].decode("id")
        return try await harness.admin.query(
            ClaimStatement.functions.statement.sql, [step, PostgresJSON(raw: stamp.metadata), queue, task, msgID]
        )[0].decode("attempts", as: Int?.self)
    }

    /// Behind a pooler a claim whose answer was lost may commit after the lookup found nothing:
    /// the worker remembers it, and `OrphanedClaimAudit` finds the late commit and gives the step a
    /// retryable error result, so orchestration retries it and the task completes.
    @Test func aClaimThatCommitsAfterItsLookupIsRetired() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db, extra: ["pooled.yaml": Self.yaml, "gated.yaml": Self.gatedYAML])
            try await Self.giveSessionDefaults(harness.admin)
            try await PgBouncer.with(databaseURL: db.url, serverConnections: 2) { bouncer in
                let orchestration = harness.startOrchestration()
                let passed = Tally()
                let handlers = OrchestrationHarness.exampleHandlers()
                handlers.register("test.gate") { _ in
                    _ = passed.increment()
                    return .success(.object([:]))
                }
                var configuration = Self.pooled(harness, through: bouncer, listen: false)
                configuration.worker.crashRecovery.scanIntervalMs = 200
                // Nothing is read from the queue: the late claim below is the only one.
                configuration.worker.eventSystems.worker.deploymentMode = .disabled
                let worker = Self.start(harness, configuration, handlers: handlers)
                try await waitUntil(timeout: .seconds(20)) { worker.daemon.runtime.dispatch.capacity.holdsLiveness }
                let executor = worker.daemon.runtime.executor
                let unresolved = try #require(executor.unresolvedClaims, "a pooled worker remembers unresolved claims")

                let task = try await orchestration.submit(OrchestrationHarness.request("pooled_gated", [:])).taskUUID
                let step = try await Self.firstStep(of: task, harness)
                // The worker's claim, as its lookup left it: not found, remembered; and another
                // claim that never commits (looked up in the same pass, kept until the horizon).
                let stamp = ClaimStamp(worker: worker.daemon.identity.uuid)
                let neverCommitted = ClaimStamp(worker: worker.daemon.identity.uuid, time: Date(timeIntervalSince1970: 1))
                unresolved.remember([step], stamp: neverCommitted)
                unresolved.remember([step], stamp: stamp)
                // The late commit of that claim (the same statement, the same stamp).
                #expect(try await Self.claim(step, of: task, stamp: stamp, harness) == 1)

                try await waitUntil(timeout: .seconds(30)) { worker.daemon.statistics.snapshot.orphanedClaimsRetired == 1 }
                #expect(unresolved.count == 1, "the claim that never committed is still looked for")
                let event: String = try await harness.admin.query(
                    """
                    SELECT metadata->>'event' AS e FROM tasker.workflow_step_transitions
                     WHERE workflow_step_uuid = $1 AND to_state = 'enqueued_as_error_for_orchestration'
                    """, [step])[0].decode("e")
                #expect(event.contains("lost behind the transaction pooler"), "\(event)")
                try await worker.stop()
                // The retry runs: a worker that reads its queue completes the task.
                let runner = Self.start(harness, Self.pooled(harness, through: bouncer, listen: false), handlers: handlers)
                #expect(try await harness.waitForTask(task, in: ["complete", "error"]) == "complete")
                #expect(passed.count == 1)
                try await runner.stop()
                try await orchestration.stop()
            }
        }
    }
}
