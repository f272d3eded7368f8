import Foundation
import Testing

@testable import TaskerExamples
@testable import TaskerModel
@testable import TaskerWorker

/// Every example handler on hostile input: huge, negative and mistyped numbers, missing fields and
/// nested junk in the task context, the handler configuration, the dependencies' results and the
/// batch cursor. Each call must end in a success or a failure: a runtime trap (overflow, force unwrap,
/// index out of range) would kill this test process, so the suite passing is the proof.
@Suite struct ExampleHandlerHostileInputTests {
    static let started = Date(timeIntervalSince1970: 1_774_127_768)

    /// Values a hostile submitter (or a corrupted result) can put where an example expects a number.
    static let hostileValues: [JSONValue] = [
        .int(4_000_000_000), .int(-4_000_000_000), .int(Int64.max), .int(Int64.min), .int(Int64.max - 1),
        .int(3_037_000_500), .int(-1), .int(0), .int(1_000_000), .int(1_000_001),
        .double(1e300), .double(-1e300), .double(9.3e18), .double(3.5),
        .string("12"), .bool(true), .null, .array([.int(1), .int(2)]), nested(depth: 64),
    ]

    static func nested(depth: Int) -> JSONValue {
        var value: JSONValue = .object(["number": .int(Int64.max), "x": .array([.null, .string("junk")])])
        for level in 0..<depth { value = level.isMultiple(of: 2) ? .array([value]) : .object(["a": value]) }
        return value
    }

    /// Every dependency name an example reads, and the batch workers' names.
    static let dependencyNames = [
        "linear_square", "linear_add", "linear_multiply", "diamond_start", "diamond_left", "diamond_right",
        "tree_root", "tree_left", "tree_right", "tree_left_a", "tree_left_b", "tree_right_a",
        "decision_validate", "decision_auto_approve", "decision_manager_approval",
        "batch_analyze", "batch_process_001", "batch_process_002", "retry_fetch",
    ]
    static let contextKeys = ["number", "amount", "item_count"]
    static let configKeys = ["addend", "factor", "offset", "threshold", "batch_size", "max_workers", "backoff_seconds"]

    static func dependencies(_ value: JSONValue) -> [String: StepExecutionResult] {
        let result: JSONValue = .object([
            "value": value, "sum": value, "processed": value, "succeeded": value, "failed": value,
            "skipped": value, "attempts": value, "approved_by": value,
        ])
        return Dictionary(
            uniqueKeysWithValues: dependencyNames.map {
                (
                    $0,
                    StepExecutionResult.success(
                        stepUUID: UUID(), result: result, startedAt: started,
                        completedAt: started, workerID: nil, hostname: nil)
                )
            })
    }

    static func cursorInputs(start: JSONValue, end: JSONValue) -> JSONValue {
        .object([
            "cursor": .object(["batch_id": "001", "start_cursor": start, "end_cursor": end, "batch_size": .int(1)]),
            "batch_metadata": .object(["cursor_field": "id", "failure_strategy": "fail_fast"]),
            "is_no_op": .bool(false),
        ])
    }

    /// How one call ended: the failure (returned or thrown), or nil for a success.
    static func run(
        _ handler: any StepHandler, taskContext: JSONValue, config: JSONValue,
        dependencies: [String: StepExecutionResult], inputs: JSONValue, attempt: Int
    ) async -> StepFailure? {
        let context = StepContext(
            taskUUID: UUID(), stepUUID: UUID(), correlationID: UUID(), namespace: "examples", taskName: "hostile",
            taskVersion: "1.0.0", stepName: "step", taskContext: taskContext, stepInputs: inputs,
            stepConfig: config, dependencyResults: dependencies, attempt: attempt)
        do {
            return try await handler.call(context).failure
        } catch let failure as StepFailure {
            return failure
        } catch {
            Issue.record("an example handler threw \(type(of: error)) instead of a StepFailure: \(error)")
            return nil
        }
    }

    static let saneConfig: JSONValue = .object([
        "addend": .int(5), "factor": .int(2), "offset": .int(1), "threshold": .int(100), "batch_size": .int(25),
        "max_workers": .int(4), "backoff_seconds": .int(1), "parent": "tree_left", "worker_template_name": "batch_process",
    ])

    @Test func everyExampleHandlerSurvivesHostileInput() async throws {
        let registry = HandlerRegistry()
        ExampleHandlers.register(into: registry)
        let callables = registry.callables.sorted()
        #expect(callables.count >= 20, "\(callables)")
        let saneContext: JSONValue = .object(["number": .int(3), "amount": .int(50), "item_count": .int(10)])
        let saneDependencies = Self.dependencies(.int(3))
        var calls = 0
        for callable in callables {
            let handler = try #require(registry.handler(for: callable))
            for value in Self.hostileValues {
                let hostileContext = JSONValue.object(Dictionary(uniqueKeysWithValues: Self.contextKeys.map { ($0, value) }))
                var hostileConfig = Dictionary(uniqueKeysWithValues: Self.configKeys.map { ($0, value) })
                hostileConfig["parent"] = "tree_left"
                let variants: [(JSONValue, JSONValue, [String: StepExecutionResult], JSONValue)] = [
                    (hostileContext, Self.saneConfig, saneDependencies, Self.cursorInputs(start: .int(0), end: value)),
                    (saneContext, .object(hostileConfig), saneDependencies, Self.cursorInputs(start: value, end: .int(10))),
                    (saneContext, Self.saneConfig, Self.dependencies(value), Self.cursorInputs(start: value, end: value)),
                    (hostileContext, .object(hostileConfig), Self.dependencies(value), value),
                ]
                for (taskContext, config, dependencies, inputs) in variants {
                    for attempt in [1, 2] {
                        _ = await Self.run(
                            handler, taskContext: taskContext, config: config,
                            dependencies: dependencies, inputs: inputs, attempt: attempt)
                        calls += 1
                    }
                }
            }
            // Nothing at all: no context, no configuration, no dependencies, no inputs.
            for (taskContext, config) in [
                (JSONValue.null, JSONValue.null), (.emptyObject, .emptyObject), (Self.nested(depth: 64), Self.nested(depth: 64)),
            ] {
                _ = await Self.run(
                    handler, taskContext: taskContext, config: config, dependencies: [:],
                    inputs: .null, attempt: 2)
                calls += 1
            }
        }
        #expect(calls > 1_000)
    }

    /// The failure `callable` ends with on this input (recorded as an issue when it succeeds).
    static func failure(
        _ callable: String, context: JSONValue, config: JSONValue = saneConfig,
        inputs: JSONValue = .null, attempt: Int = 1
    ) async throws -> StepFailure {
        let registry = HandlerRegistry()
        ExampleHandlers.register(into: registry)
        let handler = try #require(registry.handler(for: callable))
        let failure = await run(
            handler, taskContext: context, config: config, dependencies: [:], inputs: inputs,
            attempt: attempt)
        return try #require(failure, "\(callable) succeeded on \(context) / \(inputs)")
    }

    /// The reported crash: `{"number": 4000000000}` squared overflowed and trapped.
    @Test func anOverflowFailsTheStepPermanentlyNamingTheField() async throws {
        for callable in ["examples.linear.square", "examples.diamond.start"] {
            let failure = try await Self.failure(callable, context: ["number": .int(4_000_000_000)])
            #expect(!failure.retryable)
            #expect(failure.message.contains("context.number"), "\(failure.message)")
        }
        let fetch = try await Self.failure("examples.retry.fetch", context: ["number": .int(Int64.max)], attempt: 2)
        #expect(!fetch.retryable)
        #expect(fetch.message.contains("context.number"), "\(fetch.message)")
    }

    /// Sizes from the context or the cursor are bounded: no huge allocation, no endless loop.
    @Test func batchSizesFromInputAreBounded() async throws {
        let analyze = try await Self.failure("examples.batch.analyze", context: ["item_count": .int(Int64.max)])
        #expect(!analyze.retryable)
        #expect(analyze.message.contains("context.item_count"), "\(analyze.message)")

        let hugeWorkers = try await Self.failure(
            "examples.batch.analyze", context: ["item_count": .int(1_000_000)],
            config: ["batch_size": .int(1), "max_workers": .int(4_000_000_000)])
        #expect(hugeWorkers.message.contains("handler.initialization.max_workers"), "\(hugeWorkers.message)")

        let process = try await Self.failure(
            "examples.batch.process", context: .emptyObject, inputs: Self.cursorInputs(start: .int(0), end: .int(Int64.max)))
        #expect(!process.retryable)
        #expect(process.message.contains("end_cursor"), "\(process.message)")
    }

    /// Aggregating worker results that claim absurd counts saturates instead of trapping.
    @Test func batchTotalsSaturateOnAbsurdWorkerCounts() {
        var totals = BatchWorkerTotals(.withBatches(batchResults: []))
        for value in [JSONValue.int(Int64.max), .int(Int64.max), .int(Int64.max), .double(1e300)] {
            totals.add(
                .success(
                    stepUUID: UUID(), result: ["processed": value], startedAt: Self.started,
                    completedAt: Self.started, workerID: nil, hostname: nil))
        }
        #expect(totals.processed == UInt64.max)
    }
}
