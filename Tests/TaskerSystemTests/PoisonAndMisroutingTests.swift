import Foundation
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// Messages that can never run must be archived once, whatever their shape, without hiding the
/// good messages read with them; a step must be claimed only from its own namespace's queue; a
/// database error while looking up a template must not fail a step for good (issue #11, items 7
/// and 8). (The namespace `orchestration` refused at template load, item 2: `ReservedNamespaceTests` in
/// TaskerModelTests.)
@Suite("Poison and misrouted messages", .timeLimit(.minutes(3)))
struct PoisonAndMisroutingTests {
    static let yaml = PipelineRobustnessTests.yaml
    static let modes: [WorkerConfiguration.DeploymentMode] = [.pollingOnly, .eventDrivenOnly, .hybrid]

    /// Message bodies that are valid `jsonb` but no step message. `deep` stands for 10,000 nested
    /// arrays (built in SQL), deeper than the JSON decoder's limit.
    static let poisonBodies: [String] = [
        #""deep""#, "null", "42", #""a string""#, "[1, 2, 3]",
        #"{"task_uuid":"0193a6b2-0000-7000-8000-000000000001"}"#,
    ]

    @Test(arguments: Self.modes)
    func everyPoisonShapeIsArchivedOnceAndTheGoodMessagesReadWithItRun(mode: WorkerConfiguration.DeploymentMode) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let invocations = InvocationCounter()
            let worker = harness.startWorker(
                PipelineRobustnessTests.countingHandlers(invocations),
                configuration: harness.configuration(mode: mode))
            try await harness.waitForWorkersReady(1, mode: mode)
            let queue = QueueNames.workerQueue(namespace: harness.namespace)
            let tasks = try await harness.createSingleStepTasks(count: 6, step: "work")
            var bodies: [String] = []
            for (task, poison) in zip(tasks, Self.poisonBodies) {
                try await harness.transition(task["work"], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
                bodies.append(
                    try JSONValue(
                        encoding: StepMessage(
                            taskUUID: task.taskUUID, stepUUID: task["work"],
                            correlationID: task.correlationID)
                    ).jsonString())
                bodies.append(poison)
            }
            // One send of all twelve, interleaved: one batch_ready (over the per-notification cap,
            // so one queue read) or, polling, one read of them all.
            let ids: [Int64] = try await harness.admin.query(
                """
                SELECT id FROM tasker.pgmq_send_batch_with_notify($1::text, ARRAY(
                    SELECT CASE WHEN e = '"deep"'::jsonb THEN (repeat('[', 10000) || repeat(']', 10000))::jsonb ELSE e END
                      FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS x(e, i) ORDER BY i), 0) AS id
                """, [queue, PostgresJSON(raw: "[" + bodies.joined(separator: ",") + "]")]
            ).map { try $0.decode("id") }
            #expect(ids.count == 12)
            let poisonIDs = stride(from: 1, to: ids.count, by: 2).map { ids[$0] }

            for task in tasks { try await harness.waitForState(task["work"], ["enqueued_for_orchestration"]) }
            try await waitUntil { try await harness.archivedIDs().isSuperset(of: poisonIDs) }
            try await Task.sleep(for: .milliseconds(300))
            await worker.stop(within: .seconds(20))

            #expect(try await harness.queueDepth(archived: false) == 0)
            #expect(worker.daemon.statistics.snapshot.poisonMessages == Self.poisonBodies.count)
            for task in tasks { #expect(invocations.count(task["work"]) == 1) }
            // Read once and archived: nothing cycled.
            for id in poisonIDs {
                #expect(
                    try await NotificationIntakeTests.messageState(harness.admin, queue: queue, msgID: id) == "archived, read 1",
                    "poison message \(id)")
            }
        }
    }

    /// Sent one by one with notification, the read-by-id path: a body too deep for the decoder
    /// (announced by `message_ready`, it is over the payload threshold) and a body of JSON `null`
    /// (announced by `message_with_payload` without a message) are both archived once.
    @Test func poisonAnnouncedAloneIsReadByIdAndArchivedInEventDrivenMode() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let invocations = InvocationCounter()
            let worker = harness.startWorker(
                PipelineRobustnessTests.countingHandlers(invocations),
                configuration: harness.configuration(mode: .eventDrivenOnly))
            try await harness.waitForWorkersReady(1, mode: .eventDrivenOnly)
            let queue = QueueNames.workerQueue(namespace: harness.namespace)
            var poisonIDs: [Int64] = []
            for body in ["(repeat('[', 10000) || repeat(']', 10000))::jsonb", "'null'::jsonb"] {
                poisonIDs.append(
                    try await harness.admin.query(
                        "SELECT tasker.pgmq_send_with_notify($1::text, \(body), 0) AS id", [queue])[0].decode("id"))
            }
            let task = try await harness.createTask(steps: ["work"])
            try await harness.enqueue(task, "work")
            try await harness.waitForState(task["work"], ["enqueued_for_orchestration"])
            try await waitUntil { try await harness.archivedIDs().isSuperset(of: poisonIDs) }
            await worker.stop(within: .seconds(20))

            #expect(worker.daemon.statistics.snapshot.poisonMessages == 2)
            for id in poisonIDs {
                #expect(
                    try await NotificationIntakeTests.messageState(harness.admin, queue: queue, msgID: id) == "archived, read 1",
                    "poison message \(id)")
            }
        }
    }

    @Test func aStepOfAnotherNamespaceIsNotClaimedFromThisNamespacesQueue() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let other = try await PipelineHarness.make(db, yaml: NotificationIntakeTests.otherYaml)
            let invocations = InvocationCounter()
            let worker = harness.startWorker(
                PipelineRobustnessTests.countingHandlers(invocations),
                configuration: harness.configuration(mode: .hybrid))
            try await harness.waitForWorkersReady(1, mode: .hybrid)
            let otherTask = try await other.createTask(steps: ["work"])
            try await other.transition(otherTask["work"], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
            let queue = QueueNames.workerQueue(namespace: harness.namespace)
            let misrouted = try await PGMQ.sendWithNotify(
                harness.admin, queue: queue,
                message: PostgresJSON(
                    StepMessage(taskUUID: otherTask.taskUUID, stepUUID: otherTask["work"], correlationID: otherTask.correlationID)))
            try await harness.waitForArchived(misrouted)
            // The worker still runs its own steps.
            let task = try await harness.createTask(steps: ["work"])
            try await harness.enqueue(task, "work")
            try await harness.waitForState(task["work"], ["enqueued_for_orchestration"])
            await worker.stop(within: .seconds(20))

            #expect(try await other.state(otherTask["work"]) == "enqueued", "a step of another namespace was claimed")
            #expect(invocations.count(otherTask["work"]) == 0)
            #expect(worker.daemon.statistics.snapshot.poisonMessages == 1)
            #expect(worker.daemon.statistics.snapshot.claimed == 1)
        }
    }

    @Test func aTransientErrorWhileLookingUpTheTemplateIsRetriedNotHandlerNotFound() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let proxy = try AnswerLosingProxy(databaseURL: db.url)
            defer { proxy.close() }
            var configuration = harness.configuration(mode: .hybrid)
            configuration.common.database.url = proxy.url
            let invocations = InvocationCounter()
            let worker = harness.startWorker(PipelineRobustnessTests.countingHandlers(invocations), configuration: configuration)
            try await harness.waitForWorkersReady(1, mode: .hybrid)
            // A template of the same namespace registered after the worker started: not in its
            // cache, so its first step makes the worker read it from the database.
            let later = try await PipelineHarness.make(
                db,
                yaml: """
                    name: registered_later
                    namespace_name: pipeline
                    version: 1.0.0
                    steps:
                      - name: work
                        handler: { callable: test.work }
                    """)
            let task = try await later.createTask(steps: ["work"])
            proxy.loseNextAnswer(toRequestContaining: "nt.configuration")
            try await later.enqueue(task, "work")
            try await later.waitForState(task["work"], ["enqueued_for_orchestration", "enqueued_as_error_for_orchestration"])
            await worker.stop(within: .seconds(20))

            #expect(proxy.answersLost == 1, "the template lookup did not go through the proxy")
            let result = try await later.result(task["work"])
            #expect(result.isSuccess, "\(String(describing: result.error))")
            #expect(result.error?.errorType != DispatchErrorKind.handlerNotFound.rawValue)
            #expect(invocations.count(task["work"]) == 1)
        }
    }
}
