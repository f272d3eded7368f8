import Foundation
import Logging
import TaskerExamples
import TaskerModel
import TaskerWorker
import TaskerWorkerTesting
import Testing

/// The testing product: the example handlers run from a `StepContext.testing(…)` of a few values,
/// without a database, and their outcomes read back typed.
@Suite struct HandlerTestingTests {
    static let examples: HandlerRegistry = {
        let registry = HandlerRegistry()
        ExampleHandlers.register(into: registry)
        return registry
    }()

    struct Value: Decodable, Equatable { let value: Int64 }

    @Test func aContextFromAFewValuesHasDefaultsForTheRest() {
        let context = StepContext.testing(taskContext: ["number": 6])
        #expect(context.taskContext == ["number": 6])
        #expect(context.stepName == "step" && context.templateStepName == "step")
        #expect(context.namespace == "test" && context.taskName == "test_task" && context.taskVersion == "1.0.0")
        #expect(context.stepInputs == .null && context.stepConfig == .emptyObject && context.dependencyResults.isEmpty)
        #expect(context.attempt == 1 && context.maxAttempts == 3 && context.checkpoint == nil)
        #expect(context.taskUUID != context.stepUUID)
    }

    @Test func theLoggerCarriesTheStepsMetadata() {
        let context = StepContext.testing(stepName: "charge", namespace: "payments")
        #expect(context.logger[metadataKey: "task_uuid"] == "\(context.taskUUID)")
        #expect(context.logger[metadataKey: "step_uuid"] == "\(context.stepUUID)")
        #expect(context.logger[metadataKey: "correlation_id"] == "\(context.correlationID)")
        #expect(context.logger[metadataKey: "step_name"] == "charge")
        #expect(context.logger[metadataKey: "namespace"] == "payments")
    }

    @Test func aLinearChainRunsStepByStep() async throws {
        let square = try await Self.examples.run("examples.linear.square", .testing(taskContext: ["number": 6]))
        #expect(try square.decodedResult(as: Value.self) == Value(value: 36))

        let add = try await Self.examples.run(
            "examples.linear.add",
            .testing(
                taskContext: ["number": 6], dependencyResults: ["linear_square": square.result ?? .null],
                stepConfig: ["addend": 5]))
        #expect(try add.decodedResult(as: Value.self) == Value(value: 41))
    }

    @Test func aWrongDependencyFailsPermanentlyNamingIt() async throws {
        let add = try await Self.examples.run(
            "examples.linear.add",
            .testing(
                taskContext: ["number": 6], dependencyResults: ["linear_square": ["value": 35]], stepConfig: ["addend": 5]))
        let failure = try #require(add.failure)
        #expect(!failure.retryable && failure.errorType == "verification_error")
        #expect(failure.message.contains("linear_square"), "\(failure.message)")
        #expect(throws: HandlerTestingError.notASuccess(add.outcome)) { try add.decodedResult(as: Value.self) }
    }

    @Test func aMistypedInputFailsNamingItsKeyPath() async throws {
        let square = try await Self.examples.run("examples.linear.square", .testing(taskContext: ["number": "six"]))
        let failure = try #require(square.failure)
        #expect(!failure.retryable && failure.errorType == "validation_error")
        #expect(failure.errorCode == StepDataCoding.decodingErrorCode)
        #expect(failure.context["path"] == "context.number", "\(failure)")
        #expect(failure.message.hasPrefix("cannot decode context.number: expected Int64"), "\(failure.message)")
    }

    @Test func aDecisionPointsBranchIsReadable() async throws {
        for (amount, branch) in [(50, "decision_auto_approve"), (500, "decision_manager_approval")] {
            let route = try await Self.examples.run(
                "examples.decision.route",
                .testing(
                    dependencyResults: ["decision_validate": ["value": .int(Int64(amount))]], stepConfig: ["threshold": 100]))
            #expect(route.decisionOutcome == .createSteps([branch]), "\(route)")
        }
    }

    @Test func aBatchPlanAndABatchWorkerAreReadable() async throws {
        let analyze = try await Self.examples.run(
            "examples.batch.analyze",
            .testing(
                taskContext: ["item_count": 100], stepConfig: ["batch_size": 25, "max_workers": 4]))
        let plan = try #require(analyze.batchProcessingOutcome, "\(analyze)")
        #expect(plan.workerCount == 4)
        let second = try #require(plan.cursorConfigs.dropFirst().first)
        #expect(second.batchID == "002" && second.startCursor == 25 && second.endCursor == 50)

        struct WorkerResult: Decodable {
            let sum: Int64
            let processed: Int64
        }
        let inputs: JSONValue = [
            "cursor": ["batch_id": "002", "start_cursor": 25, "end_cursor": 50, "batch_size": 25],
            "batch_metadata": ["cursor_field": "index", "failure_strategy": "fail_fast"], "is_no_op": false,
        ]
        let worker = try await Self.examples.run(
            "examples.batch.process",
            .testing(
                stepName: "batch_process_002",
                stepInputs: inputs))
        let result = try worker.decodedResult(as: WorkerResult.self)
        #expect(result.processed == 25)
        #expect(result.sum == (25..<50).reduce(Int64(0)) { $0 + Int64($1 * $1) })
        #expect(worker.customMetadata?["batch_processed"] == 25)
    }

    @Test func theRetryExampleFailsOnceWithABackoffThenSucceeds() async throws {
        let first = try await Self.examples.run(
            "examples.retry.fetch",
            .testing(
                taskContext: ["number": 1], stepConfig: ["backoff_seconds": 2]))
        #expect(first.failure?.retryable == true)
        #expect(first.failure?.backoffHint != nil)
        let second = try await Self.examples.run(
            "examples.retry.fetch",
            .testing(
                taskContext: ["number": 1], stepConfig: ["backoff_seconds": 2], attempt: 2))
        #expect(try second.decodedResult(as: Value.self) == Value(value: 2))
    }

    @Test func aThrownErrorIsARetryableHandlerError() async throws {
        struct Unreachable: Error, CustomStringConvertible { var description: String { "upstream unreachable" } }
        let handler = ClosureStepHandler { _ in throw Unreachable() }
        let result = await handler.run(.testing())
        #expect(result.failure == StepFailure(message: "upstream unreachable", retryable: true))

        let failing = ClosureStepHandler { _ in throw StepFailure.permanent("bad order") }
        #expect(await failing.run(.testing()).failure == .permanent("bad order"))
    }

    @Test func anUnknownCallableIsATestError() async {
        await #expect(throws: HandlerTestingError.handlerNotFound(callable: "examples.nope")) {
            try await Self.examples.run("examples.nope", .testing())
        }
    }

    @Test func aCheckpointYieldIsReturnedForTheNextRound() async throws {
        let handler = ClosureStepHandler { context in
            guard let checkpoint = context.checkpoint else { return .checkpoint(cursor: 10, itemsProcessed: 10) }
            return .success(["resumed_from": checkpoint])
        }
        var context = StepContext.testing()
        let first = await handler.run(context)
        #expect(first.checkpointYield == CheckpointYield(cursor: 10, itemsProcessed: 10))
        context.checkpoint = ["cursor": 10]
        #expect(await handler.run(context).result == ["resumed_from": ["cursor": 10]])
    }
}
