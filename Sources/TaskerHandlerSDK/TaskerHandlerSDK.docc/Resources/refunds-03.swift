import TaskerWorker

/// The task context: `{"order_count": 250}`.
struct Recall: Decodable {
    let orderCount: Int64

    enum CodingKeys: String, CodingKey { case orderCount = "order_count" }
}

/// `payments.plan_refunds`: the batchable step, splitting the orders into cursor ranges.
public struct PlanRefunds: StepHandler {
    public init() {}

    public func call(_ context: StepContext) async throws -> StepHandlerResult {
        let recall = try context.input(as: Recall.self)
        guard (0...1_000_000).contains(recall.orderCount) else {
            throw StepFailure.permanent("context.order_count must be between 0 and 1000000, got \(recall.orderCount)",
                                        errorType: "validation_error")
        }
        let plan = BatchProcessingOutcome.plan(
            workerTemplateName: "refund_batch", totalItems: UInt64(recall.orderCount), batchSize: 100, parallelism: 4)
        return .batchOutcome(plan, extra: [:])
    }
}

/// `payments.refund_batch`: one batch worker, refunding the orders of its cursor range.
public struct RefundBatch: StepHandler {
    public init() {}

    public func call(_ context: StepContext) async throws -> StepHandlerResult {
        try await .batchWorker(context) { inputs in
            guard inputs.endPosition <= 1_000_000 else {
                return .batchFailure(message: "inputs.cursor.end_cursor is beyond the recall",
                                     errorType: "validation_error", retryable: false)
            }
            var refunded: UInt64 = 0
            for _ in inputs.startPosition..<max(inputs.startPosition, inputs.endPosition) {
                try Task.checkCancellation()
                refunded += 1  // refund the order here
            }
            return .batchWorkerSuccess(processed: refunded, succeeded: refunded, failed: 0, skipped: 0)
        }
    }
}

/// `payments.summarize_refunds`: the convergence step, adding up what the workers did.
public struct SummarizeRefunds: StepHandler {
    public init() {}

    public func call(_ context: StepContext) async throws -> StepHandlerResult {
        let scenario = try BatchAggregationScenario.detect(
            dependencyResults: context.dependencyResults, batchableStepName: "plan_refunds",
            workerTemplateName: "refund_batch")
        return .success(BatchWorkerTotals(scenario).jsonValue)
    }
}
