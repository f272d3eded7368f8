import Foundation
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The handler SDK: context helpers, registry, built-ins, decision/batch/HTTP capabilities.
@Suite struct HandlerSDKTests {
    static let started = Date(timeIntervalSince1970: 1_774_127_768)

    static func dependency(_ result: JSONValue) -> StepExecutionResult {
        .success(
            stepUUID: UUID(), result: result, startedAt: started, completedAt: started, workerID: nil,
            hostname: nil)
    }

    static func context(
        taskContext: JSONValue = .object(["order_id": .int(7), "customer": .string("ada")]),
        inputs: JSONValue = .null, config: JSONValue = .emptyObject,
        dependencies: [String: StepExecutionResult] = [:]
    ) -> StepContext {
        StepContext(
            taskUUID: UUID(), stepUUID: UUID(), correlationID: UUID(), namespace: "payments",
            taskName: "charge", taskVersion: "1.0.0", stepName: "step", taskContext: taskContext,
            stepInputs: inputs, stepConfig: config, dependencyResults: dependencies)
    }

    static func object(_ value: JSONValue?) -> [String: JSONValue] {
        if case .object(let members)? = value { return members }
        return [:]
    }

    // MARK: Context

    @Test func dependencyResultUnwrapsResult() throws {
        struct Total: Decodable { let total: Int }
        let context = Self.context(dependencies: ["sum": Self.dependency(.object(["total": .int(36)]))])
        #expect(context.dependencyResult("sum") == .object(["total": .int(36)]))
        #expect(context.dependencyResult("missing") == nil)
        #expect(try context.dependencyResult("sum", as: Total.self)?.total == 36)
        #expect(context.dependencyField("sum", "total") == .int(36))
    }

    @Test func inputAndConfigHelpers() throws {
        let context = Self.context(config: .object(["limit": .int(5), "mode": .string("fast")]))
        #expect(try context.input("order_id", as: Int.self) == 7)
        #expect(try context.input("nothing", as: Int.self) == nil)
        #expect(try context.config("limit", as: Int.self) == 5)
        #expect(try context.config("mode", as: String.self) == "fast")
        #expect(context.templateStepName == "step")
        #expect(throws: (any Error).self) { try context.input("customer", as: Int.self) }
    }

    /// The README's `input("amount", as: Int.self)` given `"abc"`: a permanent failure naming the
    /// key path, not a retryable `DecodingError` without a key (issue #31, item 3); the same for a
    /// member of the configuration, and for a path inside a member.
    @Test func aMemberThatDoesNotFitIsAPermanentFailureNamingItsKeyPath() throws {
        struct Line: Decodable {
            let sku: String
            let price: Int
        }
        let context = Self.context(
            taskContext: .object([
                "amount": .string("abc"),
                "lines": .array([.object(["sku": .string("a"), "price": .int(3)]), .object(["sku": .string("b")])]),
            ]),
            config: .object(["limit": .string("five")]))
        let amount = #expect(throws: StepFailure.self) { try context.input("amount", as: Int.self) }
        #expect(amount?.retryable == false)
        #expect(amount?.errorType == "validation_error")
        #expect(amount?.context["path"] == .string("context.amount"), "\(String(describing: amount))")
        #expect(amount?.message.hasPrefix("cannot decode context.amount: expected Int") == true, "\(String(describing: amount))")
        let lines = #expect(throws: StepFailure.self) { try context.input("lines", as: [Line].self) }
        #expect(lines?.context["path"] == .string("context.lines[1].price"), "\(String(describing: lines))")
        let limit = #expect(throws: StepFailure.self) { try context.config("limit", as: Int.self) }
        #expect(limit?.errorType == "configuration_error")
        #expect(limit?.context["path"] == .string("handler.initialization.limit"), "\(String(describing: limit))")
        // A handler that lets it propagate ends the step for good.
        let result = StepHandlerResult.failure(from: try #require(amount))
        #expect(result.failure?.retryable == false)
        #expect(result.failure?.errorType == "validation_error")
    }

    // MARK: Results

    @Test func thrownErrorsMapToFailures() {
        struct Boom: Error, CustomStringConvertible { var description: String { "boom" } }
        let plain = StepHandlerResult.failure(from: Boom())
        #expect(plain.failure?.message == "boom")
        #expect(plain.failure?.errorType == "handler_error")
        #expect(plain.failure?.retryable == true)

        let typed: any Error = StepHandlerError(
            message: "bad input", errorType: "validation_error",
            errorCode: "V1", retryable: false)
        let mapped = StepHandlerResult.failure(from: typed)
        #expect(mapped.failure?.errorCode == "V1")
        #expect(mapped.failure?.retryable == false)
    }

    @Test func handlerResultBecomesExecutionResult() {
        let uuid = UUID()
        let ok = StepHandlerResult.success(.object(["x": .int(1)]), metadata: ["m": .bool(true)])
            .toExecutionResult(
                stepUUID: uuid, startedAt: Self.started, completedAt: Self.started,
                workerID: "w", hostname: "h")
        #expect(ok.status == "completed" && ok.metadata.custom == ["m": .bool(true)])
        let failed = StepHandlerResult.failure(message: "no", retryable: false)
            .toExecutionResult(
                stepUUID: uuid, startedAt: Self.started, completedAt: Self.started,
                workerID: "w", hostname: "h")
        #expect(failed.status == "failed" && !failed.isRetryable && failed.error?.errorType == "handler_error")
    }

    // MARK: Registry and built-ins

    @Test func registryRegistersAndResolves() async throws {
        let registry = HandlerRegistry.withBuiltIns()
        #expect(registry.callables == ["tasker.echo", "tasker.fail", "tasker.noop", "tasker.sleep"])
        registry.register("custom.double") { context in
            .success(.int(Int64((context.input("order_id")?.intValue ?? 0) * 2)))
        }
        let handler = try #require(registry.handler(for: "custom.double"))
        #expect(try await handler.call(Self.context()).result == .int(14))
        #expect(handler.version == "1.0.0")
        #expect(registry.handler(for: "nope") == nil)
        #expect(registry.resolve(callable: "nope", templateStepName: "custom.double") != nil)
    }

    @Test func noopAndEcho() async throws {
        let registry = HandlerRegistry.withBuiltIns()
        let noop = try #require(registry.handler(for: "tasker.noop"))
        #expect(try await noop.call(Self.context()).result == .emptyObject)

        let context = Self.context(
            inputs: .object(["i": .int(1)]), config: .object(["c": .bool(true)]),
            dependencies: ["parent": Self.dependency(.object(["v": .int(3)]))])
        let echo = try #require(registry.handler(for: "tasker.echo"))
        let result = Self.object(try await echo.call(context).result)
        #expect(result["context"] == context.taskContext)
        #expect(result["inputs"] == .object(["i": .int(1)]))
        #expect(result["config"] == .object(["c": .bool(true)]))
        #expect(result["dependencies"] == .object(["parent": .object(["v": .int(3)])]))
    }

    @Test func failHonoursConfig() async throws {
        let fail = try #require(HandlerRegistry.withBuiltIns().handler(for: "tasker.fail"))
        let byDefault = try await fail.call(Self.context()).failure
        #expect(byDefault?.retryable == true)
        #expect(byDefault?.message == BuiltInHandlers.FailHandler.defaultMessage)
        let configured = try await fail.call(
            Self.context(
                config: .object([
                    "retryable": .bool(false), "message": .string("nope"),
                ]))
        ).failure
        #expect(configured?.retryable == false)
        #expect(configured?.message == "nope")
    }

    @Test func sleepSleepsAndHonoursCancellation() async throws {
        let sleep = try #require(HandlerRegistry.withBuiltIns().handler(for: "tasker.sleep"))
        let short = try await sleep.call(Self.context(config: .object(["ms": .int(5)])))
        #expect(short.result == .object(["slept_ms": .int(5)]))

        let long = Self.context(config: .object(["ms": .int(60_000)]))
        let task = Task { try await sleep.call(long) }
        try await Task.sleep(for: .milliseconds(20))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }

    // MARK: Decisions

    @Test func decisionOutcomesJSON() throws {
        let create = StepHandlerResult.decision(createSteps: ["a", "b"], routingContext: .object(["p": .int(1)]))
        let result = Self.object(create.result)
        #expect(
            result["decision_point_outcome"]
                == .object([
                    "type": .string("create_steps"), "step_names": .array([.string("a"), .string("b")]),
                ]))
        #expect(result["steps_created"] == .array([.string("a"), .string("b")]))
        #expect(result["routing_context"] == .object(["p": .int(1)]))

        let skip = Self.object(StepHandlerResult.skipBranches(reason: "small").result)
        #expect(skip["decision_point_outcome"] == .object(["type": .string("no_branches")]))
        #expect(skip["skip_reason"] == .string("small"))

        let decoded = try JSONDecoder().decode(
            DecisionPointOutcome.self,
            from: Data(#"{"type":"create_steps","step_names":["x"]}"#.utf8))
        #expect(decoded == .createSteps(["x"]))
        let stored = create.toExecutionResult(
            stepUUID: UUID(), startedAt: Self.started, completedAt: Self.started,
            workerID: nil, hostname: nil)
        #expect(DecisionPointOutcome.from(stored) == .createSteps(["a", "b"]))

        let failure = StepHandlerResult.decisionFailure(message: "missing amount").failure
        #expect(failure?.errorCode == "DECISION_ERROR")
        #expect(failure?.retryable == false)
    }

    // MARK: Batches

    static func ranges(_ configs: [CursorConfig]) -> [[Int]] {
        configs.map { [$0.startCursor.intValue ?? -1, $0.endCursor.intValue ?? -1, Int($0.batchSize)] }
    }

    @Test func cursorMathEdgeCases() {
        #expect(CursorConfig.evenlyDistributed(totalItems: 0, workerCount: 4).isEmpty)
        #expect(CursorConfig.evenlyDistributed(totalItems: 100, workerCount: 0).isEmpty)
        #expect(
            Self.ranges(CursorConfig.evenlyDistributed(totalItems: 10, workerCount: 3))
                == [[0, 4, 4], [4, 7, 3], [7, 10, 3]])
        #expect(Self.ranges(CursorConfig.evenlyDistributed(totalItems: 1000, workerCount: 4)).last == [750, 1000, 250])
        #expect(CursorConfig.evenlyDistributed(totalItems: 2, workerCount: 3).map(\.batchSize) == [1, 1, 0])
        #expect(CursorConfig.evenlyDistributed(totalItems: 5, workerCount: 2).map(\.batchID) == ["batch_001", "batch_002"])
        #expect(
            Self.ranges(CursorConfig.fixedSize(totalItems: 250, batchSize: 100))
                == [[0, 100, 100], [100, 200, 100], [200, 250, 50]])
        #expect(CursorConfig.fixedSize(totalItems: 1000, batchSize: 100, maxBatches: 5).count == 5)
        #expect(CursorConfig.fixedSize(totalItems: 0, batchSize: 100).isEmpty)
        #expect(CursorConfig.fixedSize(totalItems: 100, batchSize: 0).isEmpty)
        #expect(CursorConfig.batchID(index: 999) == "batch_1000")
    }

    @Test func planRoundsWorkerCountAndSpreadsRemainder() {
        #expect(
            BatchProcessingOutcome.plan(workerTemplateName: "w", totalItems: 0, batchSize: 100, parallelism: 4)
                == .noBatches)
        let small = BatchProcessingOutcome.plan(workerTemplateName: "w", totalItems: 42, batchSize: 100, parallelism: 4)
        #expect(small.workerCount == 1)
        #expect(Self.ranges(small.cursorConfigs) == [[0, 42, 42]])
        let capped = BatchProcessingOutcome.plan(
            workerTemplateName: "w", totalItems: 1001, batchSize: 100,
            parallelism: 4)
        #expect(capped.workerCount == 4)
        #expect(capped.cursorConfigs.map(\.batchSize) == [251, 250, 250, 250])
        let uncapped = BatchProcessingOutcome.plan(
            workerTemplateName: "w", totalItems: 250, batchSize: 100,
            parallelism: 0)
        #expect(uncapped.workerCount == 3)
        #expect(uncapped.cursorConfigs.map(\.batchSize) == [84, 83, 83])
        #expect(uncapped.cursorConfigs.count == Int(uncapped.workerCount))
    }

    @Test func batchOutcomeJSON() throws {
        let configs = CursorConfig.evenlyDistributed(totalItems: 200, workerCount: 2)
        let analyzer = StepHandlerResult.batchAnalyzerSuccess(
            workerTemplate: "process_batch", cursorConfigs: configs,
            totalItems: 200)
        let result = Self.object(analyzer.result)
        #expect(result["worker_count"] == .int(2))
        #expect(result["total_items"] == .int(200))
        #expect(result["worker_template"] == .string("process_batch"))
        let outcome = Self.object(result["batch_processing_outcome"])
        #expect(outcome["type"] == .string("create_batches"))
        #expect(outcome["worker_template_name"] == .string("process_batch"))
        #expect(outcome["worker_count"] == .int(2))
        #expect(outcome["total_items"] == .int(200))
        #expect(
            outcome["cursor_configs"]
                == .array([
                    .object([
                        "batch_id": .string("batch_001"), "start_cursor": .int(0), "end_cursor": .int(100),
                        "batch_size": .int(100),
                    ]),
                    .object([
                        "batch_id": .string("batch_002"), "start_cursor": .int(100), "end_cursor": .int(200),
                        "batch_size": .int(100),
                    ]),
                ]))
        let decoded = try #require(result["batch_processing_outcome"]).decode(BatchProcessingOutcome.self)
        #expect(decoded.cursorConfigs == configs)

        let none = Self.object(StepHandlerResult.noBatches(reason: "empty").result)
        #expect(none["batch_processing_outcome"] == .object(["type": .string("no_batches")]))
        #expect(none["reason"] == .string("empty"))
        #expect(StepHandlerResult.batchFailure(message: "x", retryable: true).failure?.errorCode == "BATCH_ERROR")
    }

    static let workerInputs: JSONValue = .object([
        "cursor": .object([
            "batch_id": .string("batch_002"), "start_cursor": .int(100), "end_cursor": .int(200),
            "batch_size": .int(100),
        ]),
        "batch_metadata": .object(["cursor_field": .string("id"), "failure_strategy": .string("continue_on_failure")]),
        "is_no_op": .bool(false),
        "__template_step_name": .string("process_batch"),
    ])

    @Test func batchWorkerInputsAndNoOpShortcut() async throws {
        let inputs = try #require(Self.context(inputs: Self.workerInputs).batchWorkerInputs)
        #expect(inputs.batchID == "batch_002")
        #expect(inputs.startPosition == 100 && inputs.endPosition == 200 && inputs.totalBatchSize == 100)
        #expect(inputs.cursorField == "id" && inputs.batchMetadata.failureStrategy == "continue_on_failure")
        #expect(inputs.templateStepName == "process_batch" && !inputs.isNoOp)

        var noOp = Self.object(Self.workerInputs)
        noOp["is_no_op"] = .bool(true)
        let shortcut = try await StepHandlerResult.batchWorker(Self.context(inputs: .object(noOp))) { _ in
            Issue.record("body must not run for a no-op worker")
            return .success(.emptyObject)
        }
        #expect(Self.object(shortcut.result)["no_op"] == .bool(true))

        let worked = try await StepHandlerResult.batchWorker(Self.context(inputs: Self.workerInputs)) { inputs in
            .batchWorkerSuccess(processed: inputs.totalBatchSize, succeeded: 95, failed: 3, skipped: 2)
        }
        let summary = Self.object(worked.result)
        #expect(summary["processed"] == .int(100) && summary["succeeded"] == .int(95))
        #expect(summary["failed"] == .int(3) && summary["skipped"] == .int(2))
        #expect(summary["success_rate"]?.doubleValue == 95)

        let missing = try await StepHandlerResult.batchWorker(Self.context()) { _ in .success(.emptyObject) }
        #expect(missing.failure?.errorCode == "BATCH_ERROR" && missing.failure?.retryable == false)
    }

    @Test func convergenceAggregatesBatchWorkers() throws {
        let summary = { (n: UInt64) in
            Self.dependency(
                StepHandlerResult.batchWorkerSuccess(processed: n, succeeded: n, failed: 0, skipped: 0)
                    .result ?? .null)
        }
        let deps: [String: StepExecutionResult] = [
            "analyze": Self.dependency(.object(["batch_processing_outcome": .object(["type": .string("create_batches")])])),
            "process_batch_002": summary(50), "process_batch_001": summary(100), "unrelated": summary(7),
        ]
        let scenario = try BatchAggregationScenario.detect(
            dependencyResults: deps, batchableStepName: "analyze",
            workerTemplateName: "process_batch")
        guard case .withBatches(let workers) = scenario else {
            Issue.record("expected workers")
            return
        }
        #expect(workers.map(\.stepName) == ["process_batch_001", "process_batch_002"])
        let totals = BatchWorkerTotals(scenario)
        #expect(totals.processed == 150 && totals.succeeded == 150 && totals.workers == 2)
        #expect(totals.successRate == 100)

        let none = ["analyze": Self.dependency(.object(["batch_processing_outcome": .object(["type": .string("no_batches")])]))]
        #expect(
            try BatchAggregationScenario.detect(
                dependencyResults: none, batchableStepName: "analyze",
                batchWorkerPrefix: "process_batch_"
            ).workerCount == 0)
        #expect(throws: StepFailure.self) {
            try BatchAggregationScenario.detect(
                dependencyResults: [:], batchableStepName: "analyze",
                batchWorkerPrefix: "p_")
        }
        #expect(throws: StepFailure.self) {
            try BatchAggregationScenario.detect(
                dependencyResults: ["analyze": Self.dependency(.emptyObject)],
                batchableStepName: "analyze", batchWorkerPrefix: "p_")
        }
    }

    // MARK: HTTP

    @Test(arguments: [
        (200, HTTPErrorClassification.success, false), (201, .success, false), (400, .permanentError, false),
        (404, .permanentError, false), (429, .rateLimited, true), (500, .transientError, true),
        (503, .transientError, true), (0, .networkError, true), (302, .networkError, true),
    ])
    func httpClassification(status: Int, expected: HTTPErrorClassification, retryable: Bool) {
        #expect(HTTPErrorClassification(statusCode: status) == expected)
        #expect(expected.isRetryable == retryable)
    }

    @Test func apiFailureAndSuccess() {
        let limited = StepHandlerResult.apiFailure(message: "slow down", statusCode: 429, retryAfterSeconds: 30).failure
        #expect(limited?.errorCode == "HTTP_429")
        #expect(limited?.errorType == "rate_limited")
        #expect(limited?.retryable == true)
        #expect(limited?.headers == ["retry-after": "30"])
        #expect(limited?.backoffHint?.backoffType == .rateLimit && limited?.backoffHint?.delaySeconds == 30)
        #expect(limited?.context == ["http_status": .int(429), "classification": .string("rate_limited")])

        let missing = StepHandlerResult.apiFailure(message: "gone", statusCode: 404, errorType: "not_found").failure
        #expect(missing?.errorCode == "HTTP_404" && missing?.errorType == "not_found" && missing?.retryable == false)

        let ok = StepHandlerResult.apiSuccess(data: .object(["id": .int(1)]), statusCode: 200)
        #expect(Self.object(ok.result)["status_code"] == .int(200))
        if case .success(_, let metadata) = ok.outcome { #expect(metadata["http_status"] == .int(200)) }
    }
}
