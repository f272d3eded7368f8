import Foundation
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Static SQL on the PGMQ tables (issue #16): used only for a known table layout, and doing what
/// PGMQ's functions do: `pgmq.archive` (the row moved with its columns, `archived_at` set) in the
/// claim, `tasker.pgmq_send_with_notify` (the row, both notifications, the same payload) in the
/// completion. A worker on an unknown layout, or configured so, keeps the functions.
@Suite("PGMQ static statements", .timeLimit(.minutes(2)))
struct PGMQStaticStatementsTests {
    static let yaml = """
        name: statics
        namespace_name: statics
        version: 1.0.0
        steps:
          - name: one
            handler:
              callable: tasker.noop
        """

    static let queue = QueueNames.workerQueue(namespace: "statics")

    @Test func theInstalledLayoutIsKnownAndAnyOtherIsNot() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let c = harness.admin
            #expect(try await PGMQTableLayout.detect(c, queue: Self.queue) == .withLastReadAt)
            #expect(try await PGMQTableLayout.detect(c, queue: QueueNames.stepResults) == .withLastReadAt)
            #expect(try await PGMQTableLayout.detect(c, queue: "no_such_queue") == nil)
            // Names static SQL must not carry are refused before any lookup.
            for hostile in [#"worker_x"; DROP TABLE tasker.tasks; --_queue"#, "worker_é_queue", "", String(repeating: "q", count: 48)] {
                #expect(PGMQQueueTables(queue: hostile) == nil)
                #expect(try await PGMQTableLayout.detect(c, queue: hostile) == nil)
            }
            // One column more than PGMQ made: not a layout we know.
            try await c.execute("ALTER TABLE pgmq.a_\(Self.queue) ADD COLUMN note text")
            #expect(try await PGMQTableLayout.detect(c, queue: Self.queue) == nil)
            #expect(StepQueueStatements(layouts: [:]).staticQueues.isEmpty)
        }
    }

    /// The static claim moves the queue row to the archive as it was (read count, read time,
    /// headers), with `archived_at`; a claim that does not happen archives nothing.
    @Test func theStaticClaimArchivesAsPGMQArchiveDoes() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let statements = StepQueueStatements(layouts: [Self.queue: .withLastReadAt])
            #expect(statements.claim(queue: Self.queue).statement.name == "claim.archive_static")
            #expect(!statements.claim(queue: Self.queue).statement.sql.contains("pgmq.archive("))
            let task = try await harness.createTask(steps: ["one"])
            try await harness.enqueue(task, "one")
            _ = try await PGMQ.read(harness.admin, queue: Self.queue, visibilityTimeout: 0, quantity: 1)  // read_ct 1, last_read_at set
            let columns = "msg_id, read_ct, enqueued_at, last_read_at, vt, message, headers"
            let before: String = try await harness.admin.query("SELECT (\(columns))::text AS row FROM pgmq.q_\(Self.queue)")[0].decode(
                "row")
            let msgID: Int64 = try await harness.admin.query("SELECT msg_id FROM pgmq.q_\(Self.queue)")[0].decode("msg_id")
            let request = ClaimRequest(taskUUID: task.taskUUID, stepUUID: task["one"], queue: Self.queue, msgID: msgID)
            let attempts = try await StepRepository.hydrateAndClaim(harness.admin, [request], queues: statements)
            #expect(attempts.map(\.claim) == [.claimed(attempts: 1)])
            let archived = try await harness.admin.query(
                "SELECT (\(columns))::text AS row, archived_at IS NOT NULL AS stamped FROM pgmq.a_\(Self.queue)")
            #expect(archived.count == 1)
            #expect(try archived[0].decode("row", as: String.self) == before)
            #expect(try archived[0].decode("stamped", as: Bool.self))
            #expect(try await harness.queuedIDs().isEmpty)
            // The same step claimed again (a duplicate message): nothing claimed, nothing archived.
            try await PGMQ.sendWithNotify(harness.admin, queue: Self.queue, message: PostgresJSON(raw: "{}"))
            let duplicate: Int64 = try await harness.admin.query("SELECT msg_id FROM pgmq.q_\(Self.queue)")[0].decode("msg_id")
            let again = ClaimRequest(taskUUID: nil, stepUUID: task["one"], queue: Self.queue, msgID: duplicate)
            #expect(try await StepRepository.hydrateAndClaim(harness.admin, [again], queues: statements).map(\.claim) == [.notClaimable])
            #expect(try await harness.queuedIDs() == [duplicate])
        }
    }

    /// The static completion sends the row and the two notifications with the payload of
    /// `tasker.pgmq_send_with_notify`, byte for byte (ids and `ready_at` aside), for a message
    /// embedded in the payload and for one too large to embed.
    @Test func theStaticCompletionSendsAndNotifiesAsTheFunctionDoes() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let statics = StepQueueStatements(layouts: [QueueNames.stepResults: .withLastReadAt])
            #expect(statics.result.statement.name == "result.send_static")
            #expect(!statics.result.statement.sql.contains("pgmq_send_with_notify("))
            let listener = try await db.connect()
            try await listener.listen("pgmq_message_ready.orchestration")
            try await listener.listen("pgmq_message_ready")
            for body in [#"{"small":"ü \" \\n"}"#, #"{"large":"\#(String(repeating: "x", count: 7100))"}"#] {
                var payloads: [[String]] = []
                for statements in [StepQueueStatements.functions, statics] {
                    let task = try await harness.createTask(steps: ["one"])
                    let worker = UUID()
                    _ = try await CompletionBatchTests.claimAll(harness, task, ["one"], worker: worker)
                    let metadata = #"{"worker_uuid":"\#(worker.uuidString.lowercased())"}"#
                    let rows = try await harness.admin.query(
                        statements.result.statement.prepared,
                        [
                            task["one"], "enqueued_for_orchestration", PostgresJSON(raw: metadata), PostgresJSON(raw: "{}"),
                            QueueNames.stepResults, PostgresJSON(raw: body),
                        ])
                    let msgID = try #require(try rows[0].decode("msg_id", as: Int64?.self))
                    let sent: String = try await harness.admin.query(
                        "SELECT message::text AS m FROM pgmq.q_orchestration_step_results WHERE msg_id = $1", [msgID])[0].decode("m")
                    #expect(
                        sent == (try await harness.admin.query("SELECT $1::jsonb::text AS m", [PostgresJSON(raw: body)])[0].decode("m")))
                    // The other columns as `pgmq.send(queue, message, 0)` sets them: unread, no headers, visible now.
                    let shape: String = try await harness.admin.query(
                        """
                        SELECT (read_ct, last_read_at IS NULL, headers IS NULL,
                                vt BETWEEN enqueued_at AND clock_timestamp())::text AS shape
                          FROM pgmq.q_orchestration_step_results WHERE msg_id = $1
                        """, [msgID])[0].decode("shape")
                    #expect(shape == "(0,t,t,t)")
                    // Only the result message's (the enqueue of `claimAll` notified too).
                    let notes = try await Self.notifications(listener, count: 2, queue: QueueNames.stepResults)
                    #expect(notes.map(\.channel) == ["pgmq_message_ready.orchestration", "pgmq_message_ready"])
                    #expect(notes[0].payload == notes[1].payload)
                    payloads.append(notes.map { Self.normalized($0.payload, msgID: msgID) })
                }
                #expect(payloads[0] == payloads[1])
                #expect(payloads[1][0].contains(body.count < 7000 ? "message_with_payload" : "payload_omitted"))
            }
        }
    }

    /// A worker on the known layout claims and completes with static SQL; on a layout it does not
    /// know (here the worker queue's archive has a column more), or configured for the functions,
    /// it uses PGMQ's functions; the step runs either way.
    @Test(arguments: ["known", "unknown", "configured"])
    func aWorkerChoosesByLayoutAndConfiguration(_ setting: String) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            var configuration = harness.configuration()
            if setting == "unknown" { try await harness.admin.execute("ALTER TABLE pgmq.a_\(Self.queue) ADD COLUMN note text") }
            if setting == "configured" { configuration.worker.pgmq.statements = .functions }
            let worker = harness.startWorker(HandlerRegistry.withBuiltIns(), configuration: configuration)
            let task = try await harness.createTask(steps: ["one"])
            try await harness.enqueue(task, "one")
            try await harness.waitForState(task["one"], ["enqueued_for_orchestration"])
            let chosen = worker.daemon.queueStatements.statements.staticQueues
            try await worker.stop()
            let expected: [String: [String]] = [
                "known": [Self.queue, QueueNames.stepResults], "unknown": [QueueNames.stepResults], "configured": [],
            ]
            #expect(chosen == expected[setting])
            #expect(try await harness.queueDepth(archived: true) == 1)
            #expect(try await harness.queuedIDs().isEmpty)
            #expect(try await harness.stepSummaries()[task["one"]]?.results == 1)
        }
    }

    /// Waits (bounded) for `count` notifications announcing messages of `queue`.
    static func notifications(_ c: PostgresConnection, count: Int, queue: String) async throws -> [PostgresNotification] {
        var notes: [PostgresNotification] = []
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while notes.count < count && ContinuousClock.now < deadline {
            notes += try await c.waitForNotifications(timeout: .milliseconds(200))
                .filter { $0.payload.contains("\"queue_name\" : \"\(queue)\"") }
        }
        return notes
    }

    /// The payload with its message id and `ready_at` (which differ between sends) blanked, and the
    /// step and task uuids of the embedded message replaced.
    static func normalized(_ payload: String, msgID: Int64) -> String {
        payload.replacing("\"msg_id\" : \(msgID)", with: "\"msg_id\" : ID")
            .replacing(/"ready_at" : "[^"]*"/, with: "\"ready_at\" : T")
    }
}
