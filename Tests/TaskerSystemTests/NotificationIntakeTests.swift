import Foundation
import TaskerHTTP
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// Notifications are hints from anyone: a role with no rights on `pgmq` can `pg_notify` any payload
/// on a worker's channel. The worker must not read or archive other queues' messages on their word,
/// must bound what one notification costs, must not grow metric series from names in them, and
/// must not lose messages when its listener buffer overflows (issue #11, items 2 and 9).
@Suite("Notification intake", .timeLimit(.minutes(3)))
struct NotificationIntakeTests {
    static let yaml = PipelineRobustnessTests.yaml

    /// A second namespace's template (`other`), which the worker under test does not serve.
    static let otherYaml = """
        name: elsewhere
        namespace_name: other
        version: 1.0.0
        steps:
          - name: work
            handler: { callable: test.work }
        """

    /// A connection as a fresh LOGIN role without any grant (it can connect and `pg_notify`, no more).
    static func connectAsForger(_ db: TestDatabase) async throws -> PostgresConnection {
        let role = "forger_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try await db.connect()
        try await admin.query("CREATE ROLE \(role) LOGIN")
        await admin.close()
        var components = try #require(URLComponents(string: db.url))
        components.user = role
        components.password = nil
        let forger = try await PostgresConnection.connect(url: try #require(components.string), applicationName: "tasker-test-forger")
        // It really has no rights on the queues.
        await #expect(throws: PostgresError.self) { try await forger.query("SELECT count(*) FROM pgmq.meta") }
        return forger
    }

    static func notify(_ c: PostgresConnection, namespace: String, _ payload: String) async throws {
        try await c.query("SELECT pg_notify($1, $2)", [QueueNames.readyChannel(namespace: namespace), payload])
    }

    /// A worker in EventDrivenOnly mode (messages come only through notifications and catch-up
    /// reads) with counting handlers, ready; and its queue.
    static func eventDrivenWorker(
        _ db: TestDatabase
    ) async throws
        -> (PipelineHarness, InvocationCounter, PipelineHarness.RunningWorker, String)
    {
        let harness = try await PipelineHarness.make(db, yaml: yaml)
        let invocations = InvocationCounter()
        let worker = harness.startWorker(
            PipelineRobustnessTests.countingHandlers(invocations),
            configuration: harness.configuration(mode: .eventDrivenOnly))
        try await harness.waitForWorkersReady(1, mode: .eventDrivenOnly)
        return (harness, invocations, worker, QueueNames.workerQueue(namespace: harness.namespace))
    }

    /// Where message `msgID` of `queue` is and how often it was read: `queued, read 0`,
    /// `archived, read 1`, or `missing`.
    static func messageState(_ admin: PostgresConnection, queue: String, msgID: Int64) async throws -> String {
        for (table, place) in [("q_", "queued"), ("a_", "archived")] {
            let rows = try await admin.query("SELECT read_ct FROM pgmq.\(table)\(queue) WHERE msg_id = $1", [msgID])
            if let row = rows.first { return "\(place), read \(try row.decode("read_ct", as: Int.self))" }
        }
        return "missing"
    }

    @Test func forgedNotificationsNamingOtherQueuesTouchNothingAndCreateNoSeries() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let other = try await PipelineHarness.make(db, yaml: Self.otherYaml)
            let invocations = InvocationCounter()
            let worker = harness.startWorker(
                PipelineRobustnessTests.countingHandlers(invocations),
                configuration: harness.configuration(mode: .eventDrivenOnly))
            try await harness.waitForWorkersReady(1, mode: .eventDrivenOnly)

            // Another namespace's real step message, and a message on orchestration's result queue.
            let otherTask = try await other.createTask(steps: ["work"])
            try await other.enqueue(otherTask, "work")
            let otherQueue = QueueNames.workerQueue(namespace: other.namespace)
            let otherMsg: Int64 = try await harness.admin.query("SELECT max(msg_id) AS id FROM pgmq.q_\(otherQueue)")[0].decode("id")
            let otherBody = try JSONValue(
                encoding: StepMessage(
                    taskUUID: otherTask.taskUUID, stepUUID: otherTask["work"],
                    correlationID: otherTask.correlationID)
            ).jsonString()
            let resultMsg = try await PGMQ.sendWithNotify(
                harness.admin, queue: QueueNames.stepResults,
                message: PostgresJSON(raw: otherBody))

            let forger = try await Self.connectAsForger(db)
            var forged = [
                #"{"event_type":"message_ready","queue_name":"\#(otherQueue)","msg_id":\#(otherMsg)}"#,
                #"{"event_type":"message_with_payload","queue_name":"\#(otherQueue)","msg_id":\#(otherMsg),"message":\#(otherBody)}"#,
                #"{"event_type":"message_with_payload","queue_name":"orchestration_step_results","msg_id":\#(resultMsg),"message":{"hello":1}}"#,
                #"{"event_type":"batch_ready","queue_name":"orchestration_step_results","msg_ids":[\#(resultMsg)]}"#,
                "not json at all",
            ]
            for i in 0..<20 {
                forged.append(
                    #"{"event_type":"message_with_payload","queue_name":"worker_forged\#(i)_queue","msg_id":\#(otherMsg),"message":\#(otherBody)}"#
                )
            }
            for payload in forged { try await Self.notify(forger, namespace: harness.namespace, payload) }
            try await waitUntil { worker.daemon.statistics.snapshot.notificationsRejected >= forged.count }

            // Defence in depth: a delivery from a queue the worker does not serve reaches the executor.
            let runtime = worker.daemon.runtime
            _ = await runtime.executor.execute(
                StepDelivery(queue: QueueNames.stepResults, msgID: resultMsg, message: .object(["hello": 1])))

            // The worker keeps working.
            let task = try await harness.createTask(steps: ["work"])
            try await harness.enqueue(task, "work")
            try await harness.waitForState(task["work"], ["enqueued_for_orchestration"])
            await worker.stop(within: .seconds(20))
            await forger.close()

            let statistics = worker.daemon.statistics.snapshot
            #expect(statistics.notificationsRejected == forged.count)
            #expect(statistics.deliveriesRefused == 1)
            #expect(statistics.poisonMessages == 0)
            // Untouched: neither read nor archived, and the other namespace's step was not claimed.
            #expect(try await Self.messageState(harness.admin, queue: otherQueue, msgID: otherMsg) == "queued, read 0")
            #expect(try await Self.messageState(harness.admin, queue: QueueNames.stepResults, msgID: resultMsg) == "queued, read 0")
            #expect(try await other.state(otherTask["work"]) == "enqueued")
            #expect(invocations.count(otherTask["work"]) == 0)
            #expect(invocations.count(task["work"]) == 1)
            // No series from forged names.
            let text = WorkerMetrics.shared.render() + PrometheusText.render(worker.daemon.statistics.prometheusFamilies)
            #expect(!text.contains("forged"), "metrics carry forged queue names")
            #expect(!text.contains(#"namespace="orchestration_step_results""#))
        }
    }

    @Test func aHugeForgedBatchReadyCostsOneQueueRead() async throws {
        try await withTestDatabase { db in
            let (harness, invocations, worker, queue) = try await Self.eventDrivenWorker(db)
            // Three real messages, sent without notification: only the forged batch announces them.
            var ids: [Int64] = []
            let tasks = try await harness.createSingleStepTasks(count: 3, step: "work")
            for task in tasks {
                try await harness.transition(task["work"], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
                let body = try PostgresJSON(StepMessage(taskUUID: task.taskUUID, stepUUID: task["work"], correlationID: task.correlationID))
                ids.append(try await harness.admin.query("SELECT pgmq.send($1::text, $2::jsonb) AS id", [queue, body])[0].decode("id"))
            }
            let readsBefore = worker.daemon.statistics.snapshot.notifiedReads
            let announced = ids + (100...1300).map { Int64($0) }
            let payload =
                #"{"event_type":"batch_ready","queue_name":"\#(queue)","msg_ids":[\#(announced.map(String.init).joined(separator: ","))]}"#
            #expect(payload.utf8.count > 5000 && payload.utf8.count < 8000, "about 6 KB, within pg_notify's limit")
            let forger = try await Self.connectAsForger(db)
            try await Self.notify(forger, namespace: harness.namespace, payload)
            for task in tasks { try await harness.waitForState(task["work"], ["enqueued_for_orchestration"]) }
            try await Task.sleep(for: .milliseconds(300))
            await worker.stop(within: .seconds(20))
            await forger.close()
            // One queue read for 1,204 announced ids (before the cap: one read per id).
            #expect(worker.daemon.statistics.snapshot.notifiedReads - readsBefore == 1)
            #expect(invocations.total == 3)
        }
    }

    @Test func notificationsDroppedByAFullBufferAreCountedAndTheirMessagesStillRun() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let invocations = InvocationCounter()
            var configuration = harness.configuration(mode: .eventDrivenOnly, maxConcurrentHandlers: 50)
            configuration.worker.mpscChannels.eventListeners.pgmqEventBufferSize = 1
            configuration.worker.eventSystems.worker.processing.maxConcurrentOperations = 1
            configuration.worker.mpscChannels.handlerDispatch.loadShedding.enabled = false
            let worker = harness.startWorker(PipelineRobustnessTests.countingHandlers(invocations), configuration: configuration)
            try await harness.waitForWorkersReady(1, mode: .eventDrivenOnly)
            let tasks = try await harness.createSingleStepTasks(count: 20, step: "work")
            // 20 notifications at one commit, into a buffer of one.
            try await harness.enqueueBatch(tasks, "work")
            let finished = await harness.waitForAllSteps(["enqueued_for_orchestration"], timeout: .seconds(30))
            let scrape = await WorkerScrape.collect(worker.daemon.runtime)
            await worker.stop(within: .seconds(20))
            #expect(finished, "steps whose notification was dropped were never read")
            #expect(worker.daemon.statistics.snapshot.notificationsDropped > 0)
            #expect(invocations.total == 20)
            #expect(
                PrometheusText.render(worker.daemon.statistics.prometheusFamilies)
                    .contains("tasker_worker_notifications_dropped_total"))
            #expect((scrape.jsonMetrics["notifications_dropped"]?.value ?? 0) > 0, "not in /metrics/worker")
        }
    }

    /// A forged `message_with_payload` on the worker's own channel, embedding a step message of
    /// random ids under a real message's id: acting on the embedded body would archive that real
    /// message as poison (no such step) and its step would never run.
    @Test func aForgedEmbeddedBodyNeverArchivesTheRealMessageItNames() async throws {
        try await withTestDatabase { db in
            let (harness, invocations, worker, queue) = try await Self.eventDrivenWorker(db)
            // A real message, sent without notification: only the forged one announces it.
            let task = try await harness.createTask(steps: ["work"])
            try await harness.transition(task["work"], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
            let body = try PostgresJSON(StepMessage(taskUUID: task.taskUUID, stepUUID: task["work"], correlationID: task.correlationID))
            let real: Int64 = try await harness.admin.query("SELECT pgmq.send($1::text, $2::jsonb) AS id", [queue, body])[0].decode("id")
            let forged = try JSONValue(encoding: StepMessage(taskUUID: UUID(), stepUUID: UUID(), correlationID: UUID())).jsonString()
            let forger = try await Self.connectAsForger(db)
            try await Self.notify(
                forger, namespace: harness.namespace,
                #"{"event_type":"message_with_payload","queue_name":"\#(queue)","msg_id":\#(real),"message":\#(forged)}"#)
            try await harness.waitForState(task["work"], ["enqueued_for_orchestration"])
            await worker.stop(within: .seconds(20))
            await forger.close()
            #expect(invocations.total == 1)
            #expect(worker.daemon.statistics.snapshot.poisonMessages == 0)
            #expect(try await Self.messageState(harness.admin, queue: queue, msgID: real) == "archived, read 1")
        }
    }

    /// Upstream's `pgmq_send_batch_with_notify` cuts a `batch_ready` over 7,800 characters into
    /// invalid JSON: that is the real orchestration, not a forger. Its messages are read (by a
    /// queue read) and it is not counted or logged as a rejected notification.
    @Test func aBatchReadyTruncatedByUpstreamIsReadNotRejected() async throws {
        try await withTestDatabase { db in
            let (harness, invocations, worker, queue) = try await Self.eventDrivenWorker(db)
            let tasks = try await harness.createSingleStepTasks(count: 3, step: "work")
            var bodies: [JSONValue] = []
            for task in tasks {
                try await harness.transition(task["work"], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
                bodies.append(
                    try JSONValue(encoding: StepMessage(taskUUID: task.taskUUID, stepUUID: task["work"], correlationID: task.correlationID))
                )
            }
            // 3 step messages and 497 fillers (poison), with 16-digit ids: 500 ids make a payload of
            // ~8,700 characters.
            try await harness.admin.query(
                "SELECT setval(pg_get_serial_sequence($1, 'msg_id'), 1000000000000000)",
                ["pgmq.q_\(queue)"])
            let payloadLength: Int = try await harness.admin.query(
                """
                WITH sent AS (
                    SELECT tasker.pgmq_send_batch_with_notify($1::text,
                        ARRAY(SELECT value FROM jsonb_array_elements($2::jsonb))
                        || ARRAY(SELECT jsonb_build_object('filler', g) FROM generate_series(1, 497) g)) AS msg_id)
                SELECT length(json_build_object('event_type', 'batch_ready', 'msg_ids', array_agg(msg_id))::text)::int AS n FROM sent
                """, [queue, PostgresJSON(raw: try JSONValue.array(bodies).jsonString())])[0].decode("n")
            #expect(payloadLength > 7_800, "the notification must be one upstream truncates")
            for task in tasks { try await harness.waitForState(task["work"], ["enqueued_for_orchestration"]) }
            // The fillers are archived as poison before the worker stops (a stop waits for a read under way).
            try await waitUntil(timeout: .seconds(60)) {
                try await harness.admin.query("SELECT count(*)::int AS n FROM pgmq.q_\(queue)")[0].decode("n", as: Int.self) == 0
            }
            await worker.stop(within: .seconds(20))
            #expect(invocations.total == 3)
            #expect(worker.daemon.statistics.snapshot.notificationsRejected == 0)
        }
    }
}
