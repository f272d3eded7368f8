import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// A template's `handler.method` and `handler.resolver` through the whole step path (issue #28
/// item 4): the worker runs the named entry point, stores a permanent `method_not_found` for a
/// method the handler lacks, and a hint naming no resolver is a `handler_not_found` saying so.
@Suite("Method dispatch in the step pipeline", .timeLimit(.minutes(3)))
struct PipelineMethodDispatchTests {
    static let yaml = """
        name: payments
        namespace_name: pipeline
        version: 1.0.0
        steps:
          - name: charge
            handler: { callable: payments.processor }
          - name: refund
            handler: { callable: payments.processor, method: refund, initialization: { reason: duplicate } }
          - name: void
            handler: { callable: payments.processor, method: void }
          - name: hinted
            handler: { callable: payments.processor, resolver: explicit_mapping, method: refund }
          - name: unknown_resolver
            handler: { callable: payments.processor, resolver: class_constant }
        """

    static func handlers() -> HandlerRegistry {
        let registry = HandlerRegistry.withBuiltIns()
        registry.register(
            "payments.processor",
            methods: [
                "refund": { context in
                    .success(
                        .object([
                            "did": "refund", "reason": context.stepConfig["reason"] ?? .null, "method": .string(context.handlerMethod),
                        ]))
                }
            ]
        ) { context in .success(.object(["did": "charge", "method": .string(context.handlerMethod)])) }
        return registry
    }

    @Test func theNamedEntryPointRunsAndAMissingOneFailsForGood() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let worker = harness.startWorker(Self.handlers(), configuration: harness.configuration())
            let steps = ["charge", "refund", "void", "hinted", "unknown_resolver"]
            let task = try await harness.createTask(steps: steps)
            for step in steps { try await harness.enqueue(task, step) }
            for step in steps {
                try await harness.waitForState(task[step], ["enqueued_for_orchestration", "enqueued_as_error_for_orchestration"])
            }
            try await worker.stop()

            #expect(try await harness.result(task["charge"]).result == .object(["did": "charge", "method": "call"]))
            #expect(
                try await harness.result(task["refund"]).result == .object(["did": "refund", "reason": "duplicate", "method": "refund"]))
            #expect(try await harness.result(task["hinted"]).result["did"] == "refund")

            let void = try await harness.result(task["void"])
            #expect(!void.success && void.metadata.retryable == false)
            #expect(void.error?.errorType == "method_not_found")
            #expect(
                void.error?.message
                    == "handler payments.processor has no method \"void\" (the template's handler.method); its methods: call, refund")

            let unknown = try await harness.result(task["unknown_resolver"])
            #expect(unknown.error?.errorType == "handler_not_found" && unknown.metadata.retryable == false)
            #expect(
                unknown.error?.message
                    == "Handler not found: payments.processor (handler.resolver \"class_constant\" names no resolver of this worker (its resolvers: explicit_mapping))"
            )
        }
    }
}
