import Foundation
import TaskerStepModel

/// What a `deferred_convergence` step finds among its dependencies (upstream
/// `BatchAggregationScenario` in `batch_processing/convergence.rs`).
public enum BatchAggregationScenario: Sendable, Equatable {
    /// The batchable step returned `no_batches`: read its result directly.
    case noBatches(batchableResult: StepExecutionResult)
    /// Workers ran: their results, sorted by step name (`<template>_001`, …).
    case withBatches(batchResults: [BatchWorkerResult])

    /// One batch worker's name and result.
    public struct BatchWorkerResult: Sendable, Equatable {
        public var stepName: String
        public var result: StepExecutionResult
    }

    /// The number of workers (0 for ``noBatches(batchableResult:)``).
    public var workerCount: Int {
        if case .withBatches(let results) = self { return results.count }
        return 0
    }

    /// Detects the scenario.
    ///
    /// - Parameters:
    ///   - dependencyResults: the convergence step's ``StepContext/dependencyResults``.
    ///   - batchableStepName: the batchable step (for example `analyze_dataset`).
    ///   - batchWorkerPrefix: the workers' name prefix (for example `process_batch_`).
    /// - Throws: `StepFailure` (not retryable) when the batchable step is missing, or when
    ///   it did not return `no_batches` and no worker matches the prefix.
    public static func detect(
        dependencyResults: [String: StepExecutionResult], batchableStepName: String, batchWorkerPrefix: String
    ) throws -> BatchAggregationScenario {
        guard let batchable = dependencyResults[batchableStepName] else {
            throw StepFailure.permanent(
                "Missing batchable step dependency: \(batchableStepName)",
                errorType: "batch_error", errorCode: StepHandlerResult.batchErrorCode)
        }
        if batchable.result["batch_processing_outcome"]?["type"]?.stringValue == "no_batches" {
            return .noBatches(batchableResult: batchable)
        }
        let workers =
            dependencyResults
            .filter { $0.key.hasPrefix(batchWorkerPrefix) }
            .map { BatchWorkerResult(stepName: $0.key, result: $0.value) }
            .sorted { $0.stepName < $1.stepName }
        guard !workers.isEmpty else {
            throw StepFailure.permanent(
                "No batch workers found with prefix '\(batchWorkerPrefix)' and batchable step "
                    + "'\(batchableStepName)' did not return NoBatches outcome. "
                    + "This indicates a workflow configuration error.",
                errorType: "batch_error", errorCode: StepHandlerResult.batchErrorCode)
        }
        return .withBatches(batchResults: workers)
    }

    /// ``detect(dependencyResults:batchableStepName:batchWorkerPrefix:)`` with the prefix
    /// `<workerTemplateName>_` orchestration uses for worker instances.
    public static func detect(
        dependencyResults: [String: StepExecutionResult], batchableStepName: String, workerTemplateName: String
    ) throws -> BatchAggregationScenario {
        try detect(
            dependencyResults: dependencyResults, batchableStepName: batchableStepName,
            batchWorkerPrefix: workerTemplateName + "_")
    }
}

/// Totals of batch worker summaries (`{processed,succeeded,failed,skipped}`).
public struct BatchWorkerTotals: Sendable, Equatable {
    public var processed: UInt64 = 0
    public var succeeded: UInt64 = 0
    public var failed: UInt64 = 0
    public var skipped: UInt64 = 0
    /// Workers counted (no-op workers included).
    public var workers: Int = 0
    /// Workers whose result was a no-op.
    public var noOpWorkers: Int = 0
    /// Workers whose step failed.
    public var failedWorkers: Int = 0

    public init() {}

    /// succeeded / processed × 100 (0 when nothing was processed).
    public var successRate: Double {
        processed > 0 ? Double(succeeded) / Double(processed) * 100 : 0
    }

    /// Sums the workers of a scenario (zero for ``BatchAggregationScenario/noBatches(batchableResult:)``).
    public init(_ scenario: BatchAggregationScenario) {
        guard case .withBatches(let results) = scenario else { return }
        for worker in results { add(worker.result) }
    }

    /// Adds one worker's result.
    public mutating func add(_ result: StepExecutionResult) {
        workers += 1
        if !result.success { failedWorkers += 1 }
        if result.result["no_op"]?.boolValue == true { noOpWorkers += 1 }
        // A worker's result is handler output: any number, so clamp and saturate instead of trapping.
        func count(_ key: String) -> UInt64 {
            if let value = result.result[key]?.intValue, value > 0 { return UInt64(value) }
            if let value = result.result[key]?.doubleValue, value > 0 {
                return value < 0x1p64 ? UInt64(value) : .max
            }
            return 0
        }
        func adding(_ total: UInt64, _ key: String) -> UInt64 {
            let (value, overflow) = total.addingReportingOverflow(count(key))
            return overflow ? .max : value
        }
        processed = adding(processed, "processed")
        succeeded = adding(succeeded, "succeeded")
        failed = adding(failed, "failed")
        skipped = adding(skipped, "skipped")
    }

    /// The totals as the batch worker summary shape, plus `worker_count`.
    public var jsonValue: JSONValue {
        .object([
            "processed": .int(Int64(clamping: processed)),
            "succeeded": .int(Int64(clamping: succeeded)),
            "failed": .int(Int64(clamping: failed)),
            "skipped": .int(Int64(clamping: skipped)),
            "success_rate": .double(successRate),
            "worker_count": .int(Int64(workers)),
        ])
    }
}

extension StepHandlerResult {
    /// Runs a batch worker body, returning at once for a no-op worker (`is_no_op`).
    /// Missing or malformed batch inputs fail the step with `BATCH_ERROR` (not retryable).
    public static func batchWorker(
        _ context: StepContext, _ body: (BatchWorkerInputs) async throws -> StepHandlerResult
    ) async throws -> StepHandlerResult {
        let inputs: BatchWorkerInputs
        do {
            inputs = try context.requireBatchWorkerInputs()
        } catch let failure as StepFailure {
            return .failure(failure)
        }
        if inputs.isNoOp { return .noOpBatchWorker(inputs) }
        return try await body(inputs)
    }
}
