import Foundation
import HTTPTypes
import Logging
import ServiceLifecycle
import TaskerMessaging
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerPostgres
@testable import TaskerWorker

/// The queues in a database of their own (`[common.pgmq_database]`, `PGMQ_DATABASE_URL`; issue #30
/// item 3): our worker and orchestration on a task database without PGMQ and a queue database with
/// nothing but PGMQ and its helpers (`withQueueDatabaseTestDatabases`). Nothing crosses over: the
/// task database has no queue at all, so a read, send or archive that went there would fail.
@Suite struct QueueDatabaseTests {
    /// Every example workflow completes, with the checks of `ExampleWorkflowTests`; every message
    /// went through the queue database and was archived there, each step's message once its claim
    /// committed (none came back as a stale duplicate: its visibility timeout is longer than the run).
    @Test func everyExampleWorkflowCompletesWithTheQueuesInTheirOwnDatabase() async throws {
        try await withQueueDatabaseTestDatabases { tasks, queues in
            let harness = try await OrchestrationHarness.make(tasks, queues: queues)
            let worker = harness.startWorker { configuration in
                configuration.worker.eventSystems.worker.metadata.fallbackPoller.visibilityTimeoutSeconds = 300
                configuration.worker.eventSystems.worker.timing.visibilityTimeoutSeconds = 300
            }
            let orchestration = harness.startOrchestration()
            try await ExampleWorkflowCase.runAll(harness, orchestration)
            #expect(try await Self.hasPGMQ(tasks) == false, "the task database never got PGMQ")
            let queueDB = try await queues.connect()
            // Step messages, results: every one sent to the queue database and archived there once
            // its work committed (the archives follow the commits: waited for).
            try await waitUntil(timeout: .seconds(30)) { try await Self.queuedMessages(queueDB) == 0 }
            let sent = try await Self.messagesEver(queueDB)
            let steps: Int64 = try await harness.admin.query("SELECT count(*)::int8 AS n FROM tasker.workflow_steps")[0].decode("n")
            #expect(sent >= 2 * Int(steps), "a step message and a result message per step: \(sent) for \(steps) steps")
            #expect(worker.daemon.statistics.snapshot.staleMessages == 0, "every claimed step's message archived after its claim")
            // Health and metrics read the queues where they are (the task database has none).
            let scrape = await WorkerScrape.collect(worker.daemon.runtime)
            #expect(scrape.queuesRead && scrape.queues.map(\.queue).contains("worker_examples_queue"), "\(scrape.queues)")
            let answers = try await RabbitMQWorkerTests.operatorAnswers(orchestration.service)
            #expect(answers.ready == .ok)
            let messaging = answers.detailed["checks"]?["messaging"]?["message"]?.stringValue ?? ""
            #expect(messaging.hasPrefix("PGMQ in its own database postgres") && messaging.hasSuffix("(answers)"), "\(messaging)")
            try await orchestration.stop()
            try await worker.stop()
            await queueDB.close()
        }
    }

    /// A second message for a step this worker already claimed (a redelivery after a lost archive,
    /// an orchestration's re-send) is seen as stale and archived: the step is claimed once.
    @Test func aDuplicateMessageOfAClaimedStepIsArchivedAsStale() async throws {
        try await withQueueDatabaseTestDatabases { tasks, queues in
            let harness = try await OrchestrationHarness.make(tasks, queues: queues)
            let worker = harness.startWorker()
            let orchestration = harness.startOrchestration()
            let created = try await orchestration.submit(OrchestrationHarness.request("linear_workflow", ["number": 3]))
            #expect(try await harness.waitForTask(created.taskUUID, in: ["complete", "error"]) == "complete")
            let queueDB = try await queues.connect()
            let first = try await harness.stepUUID(created.taskUUID, "linear_square")
            let duplicate = StepMessage(taskUUID: created.taskUUID, stepUUID: first, correlationID: created.correlationID)
            let stale = worker.daemon.statistics.snapshot.staleMessages
            _ = try await PGMQ.sendWithNotify(queueDB, queue: "worker_examples_queue", message: PostgresJSON(raw: duplicate.jsonString()))
            try await waitUntil(timeout: .seconds(20)) {
                let queued = try await Self.queuedMessages(queueDB)
                return worker.daemon.statistics.snapshot.staleMessages == stale + 1 && queued == 0
            }
            let transitions = try await harness.stepTransitions(created.taskUUID, "linear_square")
            #expect(transitions.filter { $0 == "in_progress" }.count == 1, "\(transitions)")
            try await orchestration.stop()
            try await worker.stop()
            await queueDB.close()
        }
    }

    /// A result stored by a worker that died before sending its message is sent by the next start,
    /// once: the start after that sends nothing again.
    @Test func aResultStoredButNeverSentIsSentByTheNextStartOnce() async throws {
        try await withQueueDatabaseTestDatabases { tasks, queues in
            let harness = try await OrchestrationHarness.make(tasks, queues: queues)
            // No orchestration runs: the result messages stay in orchestration_step_results.
            let created = try await harness.queueDatabaseOrchestration().submit(
                OrchestrationHarness.request("linear_workflow", ["number": 3]))
            let queueDB = try await queues.connect()
            var worker = harness.startWorker()
            try await waitUntil(timeout: .seconds(30)) { try await Self.queuedMessages(queueDB, QueueNames.stepResults) == 1 }
            try await worker.stop()
            // The send is lost (as if the worker had died between the commit and the send).
            try await queueDB.execute("SELECT pgmq.purge_queue('orchestration_step_results')")
            worker = harness.startWorker()
            try await waitUntil(timeout: .seconds(30)) { try await Self.queuedMessages(queueDB, QueueNames.stepResults) == 1 }
            let message: JSONValue = try await queueDB.query(
                "SELECT message FROM pgmq.q_orchestration_step_results LIMIT 1")[0].decode("message")
            let first = try await harness.stepUUID(created.taskUUID, "linear_square")
            #expect(message["step_uuid"]?.stringValue == first.uuidString.lowercased(), "\(message)")
            let marked: Int64 = try await harness.admin.query(
                "SELECT count(*)::int8 AS n FROM tasker.workflow_step_transitions WHERE metadata ? 'republished_at'")[0].decode("n")
            #expect(marked == 1)
            try await worker.stop()
            // The next start finds it announced: nothing sent again.
            try await queueDB.execute("SELECT pgmq.purge_queue('orchestration_step_results')")
            worker = harness.startWorker()
            try await waitUntil(timeout: .seconds(30)) { await worker.daemon.runtime.eventSystem.status.running }
            try await worker.stop()
            #expect(try await Self.queuedMessages(queueDB, QueueNames.stepResults) == 0)
            await queueDB.close()
        }
    }

    /// Steps enqueued by an orchestration that died before sending their messages are sent by the
    /// next orchestration's sweep, once: a step whose message is queued gets no second one.
    @Test func aStepEnqueuedButNeverSentIsSentByTheOrchestrationsSweepOnce() async throws {
        try await withQueueDatabaseTestDatabases { tasks, queues in
            let harness = try await OrchestrationHarness.make(tasks, queues: queues)
            let created = try await harness.queueDatabaseOrchestration().submit(
                OrchestrationHarness.request("linear_workflow", ["number": 3]))
            let queueDB = try await queues.connect()
            #expect(try await Self.queuedMessages(queueDB, "worker_examples_queue") == 1)
            // The send is lost.
            try await queueDB.execute("SELECT pgmq.purge_queue('worker_examples_queue')")
            let orchestration = harness.startOrchestration { $0.lostMessageSweep = .milliseconds(200) }
            try await waitUntil(timeout: .seconds(30)) { try await Self.queuedMessages(queueDB, "worker_examples_queue") == 1 }
            // Later sweeps find the message queued: nothing sent again.
            let sweeps = try #require(orchestration.service.queueDatabase).sweepsDone
            try await waitUntil(timeout: .seconds(30)) { try #require(orchestration.service.queueDatabase).sweepsDone >= sweeps + 3 }
            #expect(try await Self.messagesEver(queueDB, "worker_examples_queue") == 2, "the lost one and the one sent again")
            // And the worker takes it from there.
            let worker = harness.startWorker()
            #expect(try await harness.waitForTask(created.taskUUID, in: ["complete", "error"]) == "complete")
            try await worker.stop()
            try await orchestration.stop()
            await queueDB.close()
        }
    }

    /// A result stored by a worker that died before announcing it, whose namespaces no worker serves
    /// any more, is announced by the fleet's crash-recovery scanner, once.
    @Test func aDeadWorkersUnannouncedResultIsAnnouncedByTheRecoveryScannerOnce() async throws {
        try await withQueueDatabaseTestDatabases { tasks, queues in
            let harness = try await OrchestrationHarness.make(tasks, queues: queues)
            _ = try await harness.queueDatabaseOrchestration().submit(OrchestrationHarness.request("linear_workflow", ["number": 3]))
            let queueDB = try await queues.connect()
            let worker = harness.startWorker()
            try await waitUntil(timeout: .seconds(30)) { try await Self.queuedMessages(queueDB, QueueNames.stepResults) == 1 }
            // Its lease goes with it; its announcement is lost.
            try await worker.stop()
            try await queueDB.execute("SELECT pgmq.purge_queue('orchestration_step_results')")
            let pool = tasks.pool(maxConnections: 2)
            let queuePool = queues.pool(maxConnections: 2)
            let transport = QueueDatabaseTransport(
                pool: pool, queueDatabase: QueueDatabase(pool: queuePool, logger: Logger(label: "test.queues")), namespaces: [])
            let scanner = RecoveryScanner(
                pool: pool, identity: WorkerIdentity(), statistics: WorkerStatistics(), interval: .seconds(1),
                grace: .milliseconds(1), transport: transport)
            #expect(await scanner.announceDeadWorkersResults() == 1)
            #expect(try await Self.queuedMessages(queueDB, QueueNames.stepResults) == 1)
            #expect(await scanner.announceDeadWorkersResults() == 0, "announced once")
            // The single-database transport sends in the result's statement: nothing to announce.
            let single = RecoveryScanner(
                pool: pool, identity: WorkerIdentity(), statistics: WorkerStatistics(), interval: .seconds(1), grace: .milliseconds(1))
            #expect(await single.announceDeadWorkersResults() == 0)
            await pool.close()
            await queuePool.close()
            await queueDB.close()
        }
    }

    /// `scripts/sql/worker-role.sql` run on both databases gives a least-privilege worker role what
    /// it needs in each (the task tables in one, PGMQ in the other) and no more.
    @Test func theWorkerRunsUnderTheLeastPrivilegeRoleOnBothDatabases() async throws {
        let role = "tasker_worker_\(UUID().uuidString.prefix(8).lowercased())"
        try await withQueueDatabaseTestDatabases { tasks, queues in
            let harness = try await OrchestrationHarness.make(tasks, queues: queues)
            let queueDB = try await queues.connect()
            try await harness.admin.execute("CREATE ROLE \"\(role)\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
            do {
                try await harness.admin.execute(try WorkerRoleTests.grantScript(for: role))
                try await queueDB.execute(try WorkerRoleTests.grantScript(for: role))
                let worker = harness.startWorker { configuration in
                    configuration.common.database.url = (try? WorkerRoleTests.url(tasks.url, user: role)) ?? ""
                    configuration.common.pgmqDatabase.url = (try? WorkerRoleTests.url(queues.url, user: role)) ?? ""
                }
                let orchestration = harness.startOrchestration()
                let created = try await orchestration.submit(OrchestrationHarness.request("linear_workflow", ["number": 3]))
                #expect(try await harness.waitForTask(created.taskUUID, in: ["complete", "error"]) == "complete")
                try await orchestration.stop()
                try await worker.stop()
                let asWorker = try await PostgresConnection.connect(url: try WorkerRoleTests.url(queues.url, user: role))
                await #expect(throws: PostgresError.self) { try await asWorker.execute("DELETE FROM pgmq.meta") }
                await #expect(throws: PostgresError.self) { try await asWorker.execute("CREATE TABLE pgmq.mine (x int)") }
                await asWorker.close()
            } catch {
                Issue.record("\(error)")
            }
            // The role owns nothing: it goes with its grants.
            for c in [harness.admin, queueDB] { try await c.execute("DROP OWNED BY \"\(role)\"") }
            try await harness.admin.execute("DROP ROLE \"\(role)\"")
            await queueDB.close()
        }
    }

    /// `tasker-worker migrate` with `PGMQ_DATABASE_URL`: PGMQ and its helpers in the queue database
    /// only, the task tables in the task database only; a second run applies nothing.
    @Test func migrateWithAQueueDatabaseMigratesBothAndNothingTwice() async throws {
        try await withEmptyTestDatabase { tasks in
            try await withEmptyTestDatabase { queues in
                let environment = [
                    "TASKER_PGMQ_SQL": TestEnvironment.pgmqScript ?? "", "DATABASE_URL": tasks.url, "PGMQ_DATABASE_URL": queues.url,
                ]
                let first = try CommandLineTests.run(["migrate"], environment: environment)
                #expect(first.status == 0, "\(first.stderr)")
                #expect(
                    first.stdout.contains(
                        "queue database: applied: 0003_pgmq_notifications.sql, 0008_least_privilege_and_leases.sql, 0012_queued_steps.sql"),
                    "\(first.stdout)")
                #expect(first.stdout.contains("task database: PGMQ: not installed"), "\(first.stdout)")
                #expect(first.stdout.contains("task database: applied: 0001_uuid_v7.sql, 0002_schema.sql, 0004"), "\(first.stdout)")
                #expect(try await Self.hasPGMQ(tasks) == false)
                #expect(try await Self.hasPGMQ(queues) == true)
                let taskDB = try await tasks.connect()
                let queueDB = try await queues.connect()
                let taskTables: Bool = try await taskDB.query("SELECT to_regclass('tasker.tasks') IS NOT NULL AS t")[0].decode("t")
                let queueTables: Bool = try await queueDB.query("SELECT to_regclass('tasker.tasks') IS NOT NULL AS t")[0].decode("t")
                let helper: Bool = try await queueDB.query(
                    "SELECT to_regprocedure('tasker.pgmq_send_with_notify(text,jsonb,integer)') IS NOT NULL AS f")[0].decode("f")
                #expect(taskTables && !queueTables && helper)
                await taskDB.close()
                await queueDB.close()
                let second = try CommandLineTests.run(["migrate"], environment: environment)
                #expect(second.status == 0, "\(second.stderr)")
                #expect(second.stdout.contains("queue database: applied: nothing (up to date)"), "\(second.stdout)")
                #expect(second.stdout.contains("task database: applied: nothing (up to date)"), "\(second.stdout)")
            }
        }
    }

    // MARK: Reading the databases

    static func hasPGMQ(_ db: TestDatabase) async throws -> Bool {
        let c = try await db.connect()
        let present: Bool = try await c.query("SELECT to_regclass('pgmq.meta') IS NOT NULL AS present")[0].decode("present")
        await c.close()
        return present
    }

    /// Messages waiting in every queue (or `queue`) of the queue database.
    static func queuedMessages(_ c: PostgresConnection, _ queue: String? = nil) async throws -> Int {
        try await metricsSum(c, "queue_length", queue)
    }

    /// Messages ever sent to any queue (or `queue`) of the queue database.
    static func messagesEver(_ c: PostgresConnection, _ queue: String? = nil) async throws -> Int {
        try await metricsSum(c, "total_messages", queue)
    }

    /// The sum of `pgmq.metrics_all()`'s `column` over every queue, or `queue` alone.
    private static func metricsSum(_ c: PostgresConnection, _ column: String, _ queue: String?) async throws -> Int {
        let rows = try await c.query("SELECT queue_name, \(column)::int8 AS n FROM pgmq.metrics_all()")
        var total = 0
        for row in rows {
            let name: String = try row.decode("queue_name")
            guard queue == nil || name == queue else { continue }
            total += Int(try row.decode("n", as: Int64.self))
        }
        return total
    }
}
