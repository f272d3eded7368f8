import Foundation
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerWorker

/// Issue #26, item 1: JSON nested 365–510 levels killed the worker (a stack overflow of the JSON
/// decoder on a database connection's 1 MiB thread), the orchestration and a Python host, again after
/// every restart. One limit (`UntrustedJSON`: 128 levels read, 120 brought in) is checked in linear
/// time before any recursive decode, on every path; data stored before the limit fails its step for
/// good, once. The decoders here; every path of a running worker and orchestration:
/// `DeepJSONPathTests` in TaskerSystemTests.
@Suite("Deep JSON", .timeLimit(.minutes(5)))
struct DeepJSONTests {
    static let depths = HostileFixtures.deepJSONDepths

    /// A JSON object nested exactly `depth` levels: `{"d":[[…]]}`.
    static func nested(_ depth: Int) -> String {
        #"{"d":"# + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}"
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
}
