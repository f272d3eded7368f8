import Foundation
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerWorker

/// Issue #26, item 1: JSON nested 365–510 levels killed the worker (a stack overflow of the JSON
/// decoder on a database connection's 1 MiB thread), the orchestration and a Python host, again after
/// every restart. One limit (`UntrustedJSON`: 128 levels read, 120 brought in) is checked in linear
/// time before any recursive decode, on every path; data stored before the limit fails its step for
/// good, once.
@Suite("Deep JSON", .timeLimit(.minutes(5)))
struct DeepJSONTests {
    /// The depths tried on every path: around the limits and around the old crash window.
    static let depths = [
        UntrustedJSON.maximumValueDepth - 1, UntrustedJSON.maximumValueDepth, UntrustedJSON.maximumValueDepth + 1,
        UntrustedJSON.maximumDepth - 1, UntrustedJSON.maximumDepth, UntrustedJSON.maximumDepth + 1,
        300, 340, 365, 400, 450, 510, 511, 600, 5_000,
    ]

    /// A JSON object nested exactly `depth` levels: `{"d":[[…]]}`.
    static func nested(_ depth: Int) -> String {
        #"{"d":"# + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}"
    }

    /// The same document built by PostgreSQL (no Swift encoder involved).
    static func nestedSQL(_ depth: Int) -> String {
        "('{\"d\":' || repeat('[', \(depth - 1)) || repeat(']', \(depth - 1)) || '}')::jsonb"
    }

    static func depth(_ text: String) -> Int {
        Array(text.utf8).withUnsafeBytes { UntrustedJSON.depth(of: $0, stoppingAfter: .max).depth }
    }

    @Test func theScanCountsNestingOutsideStringsOnly() {
        #expect(Self.depth("1") == 0)
        #expect(Self.depth("[]") == 1)
        #expect(Self.depth(#"{"a":[1,{"b":[]}]}"#) == 4)
        #expect(Self.depth(#"["[[[[", "\"[[", "\\", [2]]"#) == 2)
        #expect(Self.depth(#"{"k\"}[": {"x": "]]]]"}}"#) == 2)
        #expect(Self.depth(Self.nested(400)) == 400)
        // Stops as soon as the limit is passed, and says where.
        let text = Array(Self.nested(5_000).utf8)
        let found = text.withUnsafeBytes { UntrustedJSON.depth(of: $0, stoppingAfter: 128) }
        #expect(found.depth == 129 && found.offset == 5 + 127)
        #expect(throws: JSONNestingError(what: "x", limit: 128, byteOffset: 132)) {
            try UntrustedJSON.checkDepth(text, what: "x")
        }
        #expect(throws: Never.self) { try UntrustedJSON.checkDepth(Array(Self.nested(128).utf8), what: "x") }
    }

    /// The deepest document accepted decodes (and round-trips through `JSONValue`, as handlers'
    /// typed accessors do) on the cooperative pool, where broker bodies and FFI results are decoded;
    /// the connection threads are covered by the worker test below.
    /// An FFI step event wraps the task context 4 levels down: a context accepted as a value (at
    /// most `maximumValueDepth`) makes an event every reader accepts; one stored deeper before the
    /// limit existed makes no event at all, but a `DocumentError` saying why (the step then fails).
    @Test func aStepEventIsNeverDeeperThanItsReadersAccept() throws {
        func event(contextDepth: Int) throws(ForeignStepEvent.DocumentError) -> ForeignStepEvent {
            let context = try! UntrustedJSON.decode(JSONValue.self, from: Self.nested(contextDepth), what: "context")
            let hydrated = HydratedStep(
                taskUUID: UUID(), namedTaskUUID: UUID(), correlationID: UUID(), taskContext: context,
                taskName: "t", taskVersion: "1.0.0", namespace: "n", stepUUID: UUID(), stepName: "s",
                templateStepName: "s", retryable: true, maxAttempts: 3, attempts: 0, inputs: .emptyObject,
                checkpoint: .null, currentState: "enqueued", dependencyResults: [:])
            let definition = StepDefinition(name: "s", handler: HandlerDefinition(callable: "x"))
            let step = ClaimedStep(
                message: StepMessage(taskUUID: hydrated.taskUUID, stepUUID: hydrated.stepUUID, correlationID: hydrated.correlationID),
                hydrated: hydrated, definition: definition, dependencyResults: [:], attempts: 1)
            return try ForeignStepEvent.make(step, definition: definition, checkpoint: nil)
        }
        let accepted = try event(contextDepth: UntrustedJSON.maximumValueDepth)
        #expect(Self.depth(accepted.json) == UntrustedJSON.maximumValueDepth + 4)
        #expect(throws: Never.self) { try UntrustedJSON.decode(JSONValue.self, from: accepted.json, what: "event") }
        #expect(throws: Never.self) { try event(contextDepth: UntrustedJSON.maximumDepth - 4) }
        do {
            _ = try event(contextDepth: UntrustedJSON.maximumDepth - 3)
            Issue.record("an event deeper than \(UntrustedJSON.maximumDepth) was built")
        } catch {
            #expect(error.description.contains("nested more than 128 levels deep"), "\(error.description)")
        }
    }

    @Test func theDeepestAcceptedDocumentDecodesOnTheCooperativePool() async throws {
        let text = Self.nested(UntrustedJSON.maximumDepth)
        let depth = try await Task.detached {
            let value = try UntrustedJSON.decode(JSONValue.self, from: text, what: "x")
            let again: JSONValue = try value.decode()
            return again.nestingDepth()
        }.value
        #expect(depth == UntrustedJSON.maximumDepth)
    }

    /// A value built in code, however deep, is measured without recursion.
    @Test func aValuesDepthIsMeasuredWithoutRecursion() async {
        var value = JSONValue.int(1)
        for index in 0..<5_000 { value = index.isMultiple(of: 2) ? .array([value, .null]) : .object(["k": value]) }
        let measured = await Task.detached { [value] in value.nestingDepth() }.value
        #expect(measured == 5_000)
        #expect(value.nestingDepth(stoppingAfter: 120) == 121)
        #expect(JSONValue.object(["a": 1, "b": .array([])]).nestingDepth() == 2)
    }

    /// Every decoder of untrusted JSON refuses past its limit with an error naming the limit, and
    /// decodes up to it, at every depth tried; the task request body and the FFI result are held to
    /// the value limit, the others to the read limit.
    @Test func everyDecoderRefusesPastItsLimitAndDecodesUpToIt() throws {
        for depth in Self.depths {
            let document = Self.nested(depth)
            // NOTIFY payload (its own nesting is 1: the message is a member).
            let payload = #"{"event_type":"message_with_payload","queue_name":"q","msg_id":1,"message":"# + document + "}"
            let notification = Result { try QueueNotification.parse(payload) }
            #expect((try? notification.get()) != nil ? depth + 1 <= 128 : depth + 1 > 128, "notification, depth \(depth)")
            // A stored result.
            let result = #"{"step_uuid":"0193a6b2-0000-7000-8000-000000000001","success":true,"result":"# + document + "}"
            let decoded = Result { try StepExecutionResult.decode(json: result) }
            if depth + 1 > UntrustedJSON.maximumDepth {
                #expect(throws: JSONNestingError.self, "result, depth \(depth)") { try decoded.get() }
            }
            // The task API's body.
            let body = #"{"namespace":"n","name":"t","version":"1","context":"# + document + "}"
            let request = Result { () throws(TaskAPIError) in try OrchestrationRoutes.decodeTaskRequest(Data(body.utf8)) }
            if depth + 1 > UntrustedJSON.maximumValueDepth {
                let error = #expect(throws: TaskAPIError.self, "body, depth \(depth)") { try request.get() }
                #expect(error?.message.contains("nested more than 120 levels") == true, "\(String(describing: error))")
            } else {
                #expect(try request.get().context.nestingDepth() == depth)
            }
            // A task request read from the queue: its context is held to the value limit too.
            let queued = #"{"request_id":"0193a6b2-0000-7000-8000-000000000002","task_request":"# + body + "}"
            let fromQueue = Result { try UntrustedJSON.decode(TaskRequestMessage.self, from: queued, what: "message") }
            #expect((try? fromQueue.get()) != nil ? depth < UntrustedJSON.maximumValueDepth : true, "queued, depth \(depth)")
        }
    }

    /// Runs `body` with a ready Hybrid worker over a test database, whose handlers count their runs.
    static func withCountingWorker(
        _ body: (PipelineHarness, InvocationCounter, PipelineHarness.RunningWorker) async throws -> Void
    ) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: PipelineRobustnessTests.yaml)
            let invocations = InvocationCounter()
            let worker = harness.startWorker(
                PipelineRobustnessTests.countingHandlers(invocations), configuration: harness.configuration(mode: .hybrid))
            try await harness.waitForWorkersReady(1, mode: .hybrid)
            try await body(harness, invocations, worker)
        }
    }

    /// A worker whose steps carry contexts stored before the limit (written straight into the
    /// database) at every depth tried: up to 128 the step runs; deeper, it fails for good with a
    /// `step_data_unreadable` error saying why, its message archived once, and the worker stays up
    /// and runs the next step. (Before the fix, depth 365 and more killed the test process.)
    @Test func storedContextsAtEveryDepthRunOrFailForGoodOnceAndTheWorkerStaysUp() async throws {
        try await Self.withCountingWorker { harness, invocations, worker in
            var tasks: [(depth: Int, task: PipelineHarness.SeededTask)] = []
            for depth in Self.depths {
                let task = try await harness.createTask(steps: ["work"])
                try await harness.admin.query(
                    "UPDATE tasker.tasks SET context = \(Self.nestedSQL(depth)) WHERE task_uuid = $1", [task.taskUUID])
                try await harness.enqueue(task, "work")
                tasks.append((depth, task))
            }
            for (_, task) in tasks {
                try await harness.waitForState(task["work"], ["enqueued_for_orchestration", "enqueued_as_error_for_orchestration"])
            }
            // The worker is still up: a plain step after them runs.
            let plain = try await harness.createTask(steps: ["work"])
            try await harness.enqueue(plain, "work")
            try await harness.waitForState(plain["work"], ["enqueued_for_orchestration"])
            try await worker.stop()

            for (depth, task) in tasks {
                let result = try await harness.result(task["work"])
                if depth <= UntrustedJSON.maximumDepth {
                    #expect(result.success, "depth \(depth): \(String(describing: result.error))")
                    #expect(invocations.count(task["work"]) == 1, "depth \(depth)")
                } else {
                    #expect(!result.success, "depth \(depth)")
                    #expect(result.metadata.errorType == StepExecutor.unreadableDataErrorType, "depth \(depth)")
                    #expect(result.metadata.retryable == false, "depth \(depth)")
                    #expect(result.error?.message.contains("nested more than 128 levels") == true, "depth \(depth)")
                    #expect(invocations.count(task["work"]) == 0, "depth \(depth)")
                }
            }
            #expect(try await harness.queueDepth(archived: false) == 0)
            let readCounts: [Int] = try await harness.admin.query(
                "SELECT read_ct FROM pgmq.a_\(QueueNames.workerQueue(namespace: harness.namespace))"
            ).map { try $0.decode("read_ct") }
            #expect(readCounts.count == tasks.count + 1 && readCounts.allSatisfy { $0 == 1 }, "read counts \(readCounts)")
        }
    }

    /// A dependency's stored result nested past the limit fails the dependent step for good, once.
    @Test func aDeepDependencyResultFailsTheDependentStepForGood() async throws {
        try await Self.withCountingWorker { harness, invocations, worker in
            var children: [UUID] = []
            for depth in [400, 5_000] {
                let task = try await harness.createTask(steps: ["announce", "work"], edges: [("announce", "work")])
                try await harness.transition(task["announce"], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
                try await harness.transition(
                    task["announce"], from: "enqueued", to: "in_progress", event: #"{"type":"Start"}"#)
                try await harness.transition(
                    task["announce"], from: "in_progress", to: "enqueued_for_orchestration", event: #"{"type":"Complete"}"#)
                try await harness.completeLikeOrchestration(task, "announce")
                try await harness.admin.query(
                    """
                    UPDATE tasker.workflow_steps
                       SET results = jsonb_build_object('step_uuid', $2::text, 'success', true, 'result', \(Self.nestedSQL(depth)))
                     WHERE workflow_step_uuid = $1
                    """, [task["announce"], task["announce"].uuidString.lowercased()])
                try await harness.enqueue(task, "work")
                children.append(task["work"])
            }
            for child in children { try await harness.waitForState(child, ["enqueued_as_error_for_orchestration"]) }
            try await worker.stop()
            for child in children {
                let result = try await harness.result(child)
                #expect(!result.success && result.metadata.retryable == false)
                #expect(result.metadata.errorType == StepExecutor.unreadableDataErrorType)
                #expect(invocations.count(child) == 0)
            }
        }
    }

    /// The orchestration: deep task requests on its queue (as `submit --queue` sent them) are
    /// archived once as poison and it keeps creating tasks; the task API answers 400 naming the limit.
    @Test func theOrchestrationArchivesDeepRequestsAsPoisonAndStaysUp() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let queue = QueueNames.taskRequests
            // 125: the message decodes (127 levels) but its context is over the value limit.
            let depths = [125, 130, 365, 450, 510, 5_000]
            for depth in depths {
                try await harness.admin.query(
                    """
                    SELECT tasker.pgmq_send_with_notify($1::text, jsonb_build_object(
                        'request_id', gen_random_uuid(),
                        'task_request', jsonb_build_object('namespace', 'examples', 'name', 'linear_workflow',
                            'version', '1.0.0', 'context', \(Self.nestedSQL(depth)))), 0) AS id
                    """, [queue])
            }
            // The default visibility timeout (30 s): a loaded host must not see a message come back
            // before it was archived (read twice would be the harness, not the product).
            let orchestration = harness.startOrchestration()
            try await waitUntil(timeout: .seconds(30)) { orchestration.service.statistics.poisonMessages >= depths.count }
            // Still up: a normal request becomes a task.
            let created = try await orchestration.submit(OrchestrationHarness.request("linear_workflow", ["number": 2]))
            #expect(try await harness.taskState(created.taskUUID) != nil)
            try await orchestration.stop()
            let queued: Int = try await harness.admin.query("SELECT count(*)::integer AS n FROM pgmq.q_\(queue)")[0].decode("n")
            let reads: [Int] = try await harness.admin.query("SELECT read_ct FROM pgmq.a_\(queue)").map { try $0.decode("read_ct") }
            #expect(queued == 0)
            #expect(reads.count == depths.count && reads.allSatisfy { $0 == 1 }, "read counts \(reads)")
            #expect(orchestration.service.statistics.poisonMessages == depths.count)
        }
    }

    static let processYAML = """
        name: deep_restart
        namespace_name: deep
        version: 1.0.0
        steps:
          - name: work
            handler: { callable: tasker.noop }
        """

    /// The real `tasker-worker` over a poisoned queue, three times: each start finds new steps whose
    /// stored contexts are nested 365, 510 and 5,000 levels, raw message bodies nested 450 and 5,000
    /// levels, and a plain step; it stays up, fails the deep steps for good, archives the raw bodies
    /// as poison, runs the plain step and leaves the queue empty; SIGTERM stops it cleanly. Nothing
    /// comes back on the next start. (Before the fix it died about 2 s after every start.)
    @Test func aWorkerRestartedThreeTimesOverAPoisonedQueueStaysUpAndEmptiesIt() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.processYAML)
            let queue = QueueNames.workerQueue(namespace: harness.namespace)
            var deepSteps: [UUID] = []
            var plainSteps: [UUID] = []
            var poisonIDs: [Int64] = []
            for round in 1...3 {
                for depth in [365, 510, 5_000] {
                    let task = try await harness.createTask(steps: ["work"])
                    try await harness.admin.query(
                        "UPDATE tasker.tasks SET context = \(Self.nestedSQL(depth)) WHERE task_uuid = $1", [task.taskUUID])
                    try await harness.enqueue(task, "work")
                    deepSteps.append(task["work"])
                }
                for depth in [450, 5_000] {
                    poisonIDs.append(
                        try await harness.admin.query(
                            "SELECT tasker.pgmq_send_with_notify($1::text, \(Self.nestedSQL(depth)), 0) AS id", [queue]
                        )[0].decode("id"))
                }
                let plain = try await harness.createTask(steps: ["work"])
                try await harness.enqueue(plain, "work")
                plainSteps.append(plain["work"])

                let worker = try WorkerProcess(["run"], db: db, templatePath: harness.templateDirectory)
                defer { worker.kill() }
                try await waitUntil(timeout: .seconds(60)) {
                    guard worker.process.isRunning else { return true }
                    let queued = try await harness.queueDepth(archived: false)
                    let settled = try await harness.countSteps(
                        in: ["enqueued_for_orchestration", "enqueued_as_error_for_orchestration"])
                    return queued == 0 && settled == deepSteps.count + plainSteps.count
                }
                #expect(worker.process.isRunning, "round \(round): the worker died:\n\(worker.log.suffix(3000))")
                let stopped = try await worker.terminate(within: .seconds(40))
                #expect(stopped && worker.process.terminationStatus == 0, "round \(round):\n\(worker.log.suffix(3000))")
            }
            #expect(try await harness.queueDepth(archived: false) == 0)
            for step in deepSteps {
                let result = try await harness.result(step)
                #expect(!result.success && result.metadata.retryable == false)
                #expect(result.metadata.errorType == StepExecutor.unreadableDataErrorType)
            }
            for step in plainSteps { #expect(try await harness.result(step).success) }
            for id in poisonIDs {
                #expect(
                    try await NotificationIntakeTests.messageState(harness.admin, queue: queue, msgID: id) == "archived, read 1",
                    "poison message \(id)")
            }
        }
    }
}
