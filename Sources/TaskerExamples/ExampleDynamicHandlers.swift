import Foundation
import TaskerModel
import TaskerWorker

/// `decision_workflow`: validate → route (decision) → auto_approve | manager_approval → finalize.
enum DecisionHandlers {
    static func register(into registry: HandlerRegistry) {
        registry.register("examples.decision.validate") { context in
            let amount = try context.input(as: AmountInput.self).amount
            guard amount > 0 else {
                throw StepFailure.permanent("amount must be positive, got \(amount)", errorType: "validation_error")
            }
            return try .success(encoding: StepValue(value: amount))
        }
        registry.register("examples.decision.route") { context in
            let amount = try context.dependencyResult(of: "decision_validate", as: StepValue.self).value
            let threshold = try context.configuration(as: ThresholdConfig.self).threshold
            let branch = amount < threshold ? "decision_auto_approve" : "decision_manager_approval"
            return .decision(createSteps: [branch], routingContext: ["amount": .int(amount), "threshold": .int(threshold)])
        }
        registry.register("examples.decision.auto_approve") { context in
            let amount = try context.dependencyResult(of: "decision_validate", as: StepValue.self).value
            return try .success(encoding: Approval(value: amount, approvedBy: "system"))
        }
        registry.register("examples.decision.manager_approval") { context in
            let amount = try context.dependencyResult(of: "decision_validate", as: StepValue.self).value
            return try .success(encoding: Approval(value: amount, approvedBy: "manager"))
        }
        registry.register("examples.decision.finalize") { context in
            let amount = try context.input(as: AmountInput.self).amount
            let threshold = try context.configuration(as: ThresholdConfig.self).threshold
            let expected = amount < threshold ? "decision_auto_approve" : "decision_manager_approval"
            let other = amount < threshold ? "decision_manager_approval" : "decision_auto_approve"
            guard context.dependencyResults[other] == nil else {
                throw StepFailure.permanent("\(other) ran although the amount was \(amount)", errorType: "verification_error")
            }
            let approval = try context.dependencyResult(of: expected, as: Approval.self)
            try ExampleValues.check(approval.value, equals: amount, expected)
            return .success(["value": .int(amount), "branch": .string(expected), "approved_by": .string(approval.approvedBy)])
        }
    }
}

/// `batch_workflow`: analyze (batchable) → batch_process_NNN workers → aggregate (convergence).
///
/// `item_count` and the cursors are bounded by `ExampleValues.maxBatchItems` and `max_workers` by
/// `ExampleValues.maxBatchWorkers`, so no input can size a huge allocation or loop or overflow the sums.
enum BatchHandlers {
    static func register(into registry: HandlerRegistry) {
        registry.register("examples.batch.analyze") { context in
            let count = try ExampleValues.bounded(
                context.input(as: ItemCountInput.self).itemCount, 0...ExampleValues.maxBatchItems, "context.item_count")
            let config = try context.configuration(as: BatchAnalyzerConfig.self)
            let template = config.workerTemplateName ?? "batch_process"
            let size = try ExampleValues.bounded(
                config.batchSize, 1...ExampleValues.maxBatchItems,
                "handler.initialization.batch_size", errorType: "configuration_error")
            let maxWorkers = try ExampleValues.bounded(
                config.maxWorkers, 1...ExampleValues.maxBatchWorkers,
                "handler.initialization.max_workers", errorType: "configuration_error")
            // ceil(count / size) without `count + size - 1`; all three are bounded above.
            let workers = Int(min(count / size + (count % size == 0 ? 0 : 1), maxWorkers))
            // Batch ids "001", "002", … so that workers are named `<template>_001`, ….
            let cursors = CursorConfig.evenlyDistributed(totalItems: UInt64(count), workerCount: workers)
                .enumerated().map { index, cursor in
                    var numbered = cursor
                    numbered.batchID = String(format: "%03d", index + 1)
                    return numbered
                }
            return .batchAnalyzerSuccess(workerTemplate: template, cursorConfigs: cursors, totalItems: UInt64(count))
        }
        registry.register("examples.batch.process") { context in
            try await .batchWorker(context) { inputs in
                // The analyzer never makes a cursor beyond `maxBatchItems`; anything else is forged or
                // corrupt. Below that bound the loop is short and the sum of squares fits in Int64.
                guard inputs.endPosition <= UInt64(ExampleValues.maxBatchItems) else {
                    return .batchFailure(
                        message: "inputs.cursor.end_cursor must be at most \(ExampleValues.maxBatchItems), "
                            + "got \(inputs.endPosition)", errorType: "validation_error", retryable: false)
                }
                var sum: Int64 = 0
                for index in inputs.startPosition..<max(inputs.startPosition, inputs.endPosition) {
                    sum += Int64(index) * Int64(index)
                }
                let processed = inputs.totalBatchSize
                return .batchWorkerSuccess(
                    processed: processed, succeeded: processed, failed: 0, skipped: 0,
                    extra: ["sum": .int(sum), "batch_id": .string(inputs.batchID)])
            }
        }
        registry.register("examples.batch.aggregate") { context in
            let count = try ExampleValues.bounded(
                context.input(as: ItemCountInput.self).itemCount, 0...ExampleValues.maxBatchItems, "context.item_count")
            let results = context.dependencyResults
            let scenario = try BatchAggregationScenario.detect(
                dependencyResults: results, batchableStepName: "batch_analyze", workerTemplateName: "batch_process")
            let totals = BatchWorkerTotals(scenario)
            var sum: Int64 = 0
            if case .withBatches(let workers) = scenario {
                for worker in workers {
                    let part = try context.dependencyResult(of: worker.stepName, as: BatchWorkerSum.self).sum ?? 0
                    sum = try ExampleValues.sum(sum, part, "sum of the batch workers' result.sum")
                }
            }
            // count ≤ 10⁶, so the product stays below 2 × 10¹⁸.
            let expected = count > 0 ? (count - 1) * count * (2 * count - 1) / 6 : 0
            try ExampleValues.check(sum, equals: expected, "sum of squares below \(count)")
            try ExampleValues.check(Int64(clamping: totals.processed), equals: count, "items processed")
            return try .success(
                encoding: BatchTotal(
                    value: sum, processed: Int64(clamping: totals.processed),
                    workers: Int64(scenario.workerCount)))
        }
    }
}

/// `retry_workflow`: fetch (fails once, retryably, with a backoff hint) → confirm.
enum RetryHandlers {
    static func register(into registry: HandlerRegistry) {
        registry.register("examples.retry.fetch") { context in
            let number = try context.input(as: NumberInput.self).number
            if context.attempt <= 1 {
                let backoff = (try? context.configuration(as: RetryConfig.self))?.backoffSeconds
                let delay = UInt32(clamping: backoff ?? 1)
                throw StepFailure.retryable(
                    "upstream service busy on attempt \(context.attempt)",
                    errorType: "service_unavailable",
                    backoffHint: .serverRequested(delay, context: "example backoff"))
            }
            return try .success(
                encoding: FetchResult(
                    value: try ExampleValues.sum(number, 1, "context.number + 1"),
                    attempts: Int64(context.attempt)))
        }
        registry.register("examples.retry.confirm") { context in
            let number = try context.input(as: NumberInput.self).number
            let next = try ExampleValues.sum(number, 1, "context.number + 1")
            let fetched = try context.dependencyResult(of: "retry_fetch", as: FetchResult.self)
            try ExampleValues.check(fetched.value, equals: next, "retry_fetch")
            try ExampleValues.check(fetched.attempts, equals: 2, "attempts of retry_fetch")
            return .success(["value": .int(next), "confirmed": true])
        }
    }
}
