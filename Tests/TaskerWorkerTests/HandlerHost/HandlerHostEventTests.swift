import Foundation
import Logging
import TaskerTestSupport
import Testing

@testable import TaskerHandlerHost
@testable import TaskerModel
@testable import TaskerWorker

/// `TaskerHandlerHost` (issue #31 item 1): a handler package's Swift handlers run on the prebuilt
/// worker library through its FFI dispatch channel. What the host reads from a step event is what the
/// worker's own dispatcher gives a handler, and what it answers is what the worker would store; a
/// hostile or broken event is answered with a failure naming what was wrong, never a crash.
@Suite("Handler host: step events")
struct HandlerHostEventTests {
    static let dependency = StepExecutionResult.success(
        stepUUID: UUID(), result: ["charged": 2500, "currency": "EUR"], startedAt: Date(), completedAt: Date(),
        workerID: "worker_x", hostname: "h")

    /// A claimed step as the worker builds it, and its event document (`ForeignStepEvent.make`).
    static func event(
        handler: HandlerDefinition = HandlerDefinition(callable: "payments.send_receipt", initialization: ["currency": "EUR"]),
        context: JSONValue = ["amount": 2500], checkpoint: JSONValue? = nil, timeoutSeconds: Int? = nil
    ) throws -> (step: ClaimedStep, json: String) {
        let dependencyJSON = try JSONValue(encoding: dependency)
        let hydrated = HydratedStep(
            taskUUID: UUID(), namedTaskUUID: UUID(), correlationID: UUID(), taskContext: context,
            taskName: "checkout", taskVersion: "1.0.0", namespace: "payments", stepUUID: UUID(), stepName: "send_receipt_2",
            templateStepName: "send_receipt", retryable: true, maxAttempts: 3, attempts: 1, inputs: ["batch": 2],
            checkpoint: .null, currentState: "enqueued", dependencyResults: ["charge_card": dependencyJSON])
        var definition = StepDefinition(name: "send_receipt", handler: handler)
        definition.timeoutSeconds = timeoutSeconds
        let step = ClaimedStep(
            message: StepMessage(taskUUID: hydrated.taskUUID, stepUUID: hydrated.stepUUID, correlationID: hydrated.correlationID),
            hydrated: hydrated, definition: definition, dependencyResults: ["charge_card": dependency], attempts: 2)
        return (step, try ForeignStepEvent.make(step, definition: definition, checkpoint: checkpoint).json)
    }

    struct Unexpected: Error { var what: String }

    static func processor(_ handlers: HandlerRegistry) -> StepEventProcessor {
        StepEventProcessor(handlers: handlers, logger: Logger(label: "test"), workerID: "worker_host", hostname: "host")
    }

    /// The stored result a reply completes with.
    static func stored(_ reply: StepEventProcessor.Reply) throws -> StepExecutionResult {
        guard case .complete(_, _, let json) = reply else { throw Unexpected(what: "no completion: \(reply)") }
        return try UntrustedJSON.decode(StepExecutionResult.self, from: json, what: "result")
    }

    @Test func theContextIsTheOneTheWorkersDispatcherBuilds() throws {
        let (step, json) = try Self.event(checkpoint: ["cursor": 7, "items_processed": 7], timeoutSeconds: 12)
        let document = try UntrustedJSON.decode(JSONValue.self, from: json, what: "event")
        let event = try StepEvent(document, timeout: .seconds(30), logger: Logger(label: "test"))
        let context = event.context
        let hydrated = step.hydrated
        #expect(context.taskUUID == hydrated.taskUUID && context.stepUUID == hydrated.stepUUID)
        #expect(context.correlationID == hydrated.correlationID)
        #expect(context.namespace == "payments" && context.taskName == "checkout" && context.taskVersion == "1.0.0")
        #expect(context.stepName == "send_receipt_2" && context.templateStepName == "send_receipt")
        #expect(context.taskContext == ["amount": 2500] && context.stepInputs == ["batch": 2])
        #expect(context.stepConfig == ["currency": "EUR"])
        #expect(context.handlerCallable == "payments.send_receipt" && context.handlerMethod == "call")
        #expect(context.attempt == 2 && context.maxAttempts == 3)
        #expect(context.checkpoint == ["cursor": 7, "items_processed": 7])
        #expect(context.timeout == .seconds(12))
        #expect(context.dependencyResult("charge_card") == ["charged": 2500, "currency": "EUR"])
        #expect(context.logger[metadataKey: "step_uuid"] == "\(hydrated.stepUUID)")
        #expect(event.eventID == document["event_id"]?.stringValue)
    }

    struct Receipt: StepHandler {
        func call(_ context: StepContext) async throws -> StepHandlerResult {
            struct Charge: Decodable { var charged: Int }
            let charge = try context.dependencyResult(of: "charge_card", as: Charge.self)
            return .success(["receipt": .int(Int64(charge.charged))])
        }
    }

    @Test func aHandlersSuccessIsCompletedWithTheStoredResult() async throws {
        let handlers = HandlerRegistry()
        handlers.register("payments.send_receipt", Receipt())
        let (step, json) = try Self.event()
        let reply = await Self.processor(handlers).process(json)
        let result = try Self.stored(reply)
        #expect(result.stepUUID == step.hydrated.stepUUID && result.success)
        #expect(result.result == ["receipt": 2500])
        #expect(result.metadata.workerID == "worker_host")
    }

    /// The same rules as the worker's dispatcher (`StepHandlerResult.storedResult`): a thrown
    /// `StepFailure` is that failure (a typed input that does not fit: permanent, naming its key
    /// path), any other error a retryable `handler_error`.
    @Test func thrownErrorsBecomeTheWorkersFailures() async throws {
        struct Boom: Error, CustomStringConvertible { var description: String { "boom" } }
        let handlers = HandlerRegistry()
        handlers.register("typed") { context in .success(["amount": .int(Int64(try context.input("amount", as: Int.self) ?? 0))]) }
        handlers.register("boom") { _ in throw Boom() }
        let typed = try Self.stored(
            await Self.processor(handlers).process(try Self.event(handler: .init(callable: "typed"), context: ["amount": "abc"]).json))
        #expect(!typed.success && typed.error?.retryable == false)
        #expect(typed.error?.message.contains("context.amount") == true, "\(String(describing: typed.error))")
        let boom = try Self.stored(await Self.processor(handlers).process(try Self.event(handler: .init(callable: "boom")).json))
        #expect(!boom.success && boom.error?.retryable == true && boom.error?.errorType == "handler_error")
        #expect(boom.error?.message.contains("boom") == true)
    }

    @Test func anUnknownCallableIsAPermanentHandlerNotFound() async throws {
        let reply = await Self.processor(HandlerRegistry()).process(try Self.event(handler: .init(callable: "nobody.home")).json)
        let result = try Self.stored(reply)
        #expect(!result.success && result.error?.retryable == false && result.error?.errorType == "handler_not_found")
    }

    @Test func aCheckpointYieldGoesBackAsACheckpoint() async throws {
        let handlers = HandlerRegistry()
        handlers.register("batch") { _ in .checkpoint(cursor: ["page": 3], itemsProcessed: 30, accumulatedResults: ["sum": 9]) }
        let (step, json) = try Self.event(handler: .init(callable: "batch"))
        guard case .checkpoint(_, _, let text) = await Self.processor(handlers).process(json) else {
            Issue.record("no checkpoint reply")
            return
        }
        let checkpoint = try UntrustedJSON.decode(JSONValue.self, from: text, what: "checkpoint")
        #expect(checkpoint["step_uuid"]?.stringValue == step.hydrated.stepUUID.uuidString.lowercased())
        #expect(
            checkpoint["cursor"] == ["page": 3] && checkpoint["items_processed"] == 30 && checkpoint["accumulated_results"] == ["sum": 9])
    }

    /// Hostile or broken events: never a crash; an event that names its ids gets a permanent
    /// `event_error` naming the member that is wrong, one that does not is left to its timeout.
    @Test func aMalformedEventIsAnsweredSayingWhatIsWrong() async throws {
        let processor = Self.processor(HandlerRegistry.withBuiltIns())
        for text in [
            "", "not json", "[]", #"{"event_id": 1}"#, #"{"event_id":"e","step_uuid":"nope"}"#,
            String(repeating: "[", count: 400) + String(repeating: "]", count: 400),
        ] {
            guard case .unanswerable = await processor.process(text) else {
                Issue.record("answered: \(text.prefix(40))")
                continue
            }
        }
        let (_, json) = try Self.event()
        var document = try UntrustedJSON.decode(JSONValue.self, from: json, what: "event")
        guard case .object(var members) = document, case .object(var sequence)? = members["task_sequence_step"],
            case .object(var step)? = sequence["workflow_step"]
        else { throw Unexpected(what: "the event document's shape") }
        step["attempts"] = "two"
        sequence["workflow_step"] = .object(step)
        members["task_sequence_step"] = .object(sequence)
        document = .object(members)
        let result = try Self.stored(await processor.process(try document.jsonString()))
        #expect(!result.success && result.error?.retryable == false && result.error?.errorType == "event_error")
        #expect(result.error?.message.contains("task_sequence_step.workflow_step.attempts is not an integer") == true)
    }

    /// A handler still running at its step's timeout (`timeout_seconds`) is cancelled and answered
    /// with a retryable `handler_timeout`, not waited for.
    @Test func aHandlerPastItsTimeoutIsCancelledAndAnsweredAsTimedOut() async throws {
        let handlers = HandlerRegistry()
        let cancelled = Tally()
        handlers.register("slow") { _ in
            do {
                try await Task.sleep(for: .seconds(600))
            } catch {
                cancelled.increment()
                throw error
            }
            return .success(["late": true])
        }
        let reply = await Self.processor(handlers).process(try Self.event(handler: .init(callable: "slow"), timeoutSeconds: 1).json)
        let result = try Self.stored(reply)
        #expect(!result.success && result.error?.retryable == true && result.error?.errorType == "handler_timeout")
        try await waitUntil { cancelled.count == 1 }
    }

    /// A reply the library refused as malformed is replaced by a failure saying why: a checkpoint by a
    /// retryable `checkpoint_error`, a result by a permanent failure.
    @Test func aRefusedReplyBecomesAFailureSayingWhy() throws {
        let processor = Self.processor(HandlerRegistry())
        let step = UUID()
        for (reply, retryable) in [
            (StepEventProcessor.Reply.checkpoint(eventID: "e", stepUUID: step, checkpointJSON: "{}"), true),
            (.complete(eventID: "e", stepUUID: step, resultJSON: "{}"), false),
        ] {
            let replaced = try Self.stored(try #require(processor.replacement(for: reply, refusal: "nested too deep")))
            #expect(replaced.stepUUID == step && !replaced.success && replaced.error?.retryable == retryable)
            #expect(replaced.error?.message.contains("nested too deep") == true)
        }
        #expect(processor.replacement(for: .unanswerable(reason: "x"), refusal: "y") == nil)
    }

    /// Where the host looks for the library: the configuration's path, `TASKER_WORKER_LIBRARY`, then
    /// `.build/{debug,release}` of every Swift package the working directory is in (a handler package
    /// inside the worker's checkout finds the checkout's build; a directory without `Package.swift`,
    /// such as `/tmp`, is not looked in), then `/usr/local/lib`.
    @Test func theLibraryIsLookedForWhereTheREADMESays() throws {
        try withTemporaryDirectory { root in
            let handlerPackage = root + "/repo/Examples/first-handler"
            try FileManager.default.createDirectory(atPath: handlerPackage, withIntermediateDirectories: true)
            _ = try writeFile(root + "/repo", "Package.swift", "// the worker")
            _ = try writeFile(handlerPackage, "Package.swift", "// the handlers")
            let configured = HandlerHost.Configuration(libraryPath: "/x/lib.so")
            #expect(configured.libraryCandidates(environment: ["TASKER_WORKER_LIBRARY": "/y"], workingDirectory: "/a") == ["/x/lib.so"])
            let plain = HandlerHost.Configuration()
            #expect(plain.libraryCandidates(environment: ["TASKER_WORKER_LIBRARY": "/y/l.so"], workingDirectory: "/a") == ["/y/l.so"])
            let resolvedRoot = URL(fileURLWithPath: root).standardizedFileURL.path
            #expect(
                plain.libraryCandidates(environment: [:], workingDirectory: handlerPackage) == [
                    "\(resolvedRoot)/repo/Examples/first-handler/.build/debug/libTaskerWorkerFFI.so",
                    "\(resolvedRoot)/repo/Examples/first-handler/.build/release/libTaskerWorkerFFI.so",
                    "\(resolvedRoot)/repo/.build/debug/libTaskerWorkerFFI.so", "\(resolvedRoot)/repo/.build/release/libTaskerWorkerFFI.so",
                    "/usr/local/lib/libTaskerWorkerFFI.so",
                ])
        }
        #expect(throws: HandlerHostError.libraryNotFound(lookedAt: ["/nonexistent/lib.so"])) {
            try WorkerLibrary(candidates: ["/nonexistent/lib.so"])
        }
    }

    /// A library another user could have written is not loaded (its code would run as this user).
    @Test func aLibraryWritableByOthersIsRefused() throws {
        try withTemporaryDirectory { root in
            let path = try writeFile(root, "libTaskerWorkerFFI.so", "not a library")
            try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: path)
            do {
                _ = try WorkerLibrary(candidates: [path])
                Issue.record("a world-writable library was loaded")
            } catch {
                #expect("\(error)".contains("writable by other users"), "\(error)")
            }
        }
    }
}
