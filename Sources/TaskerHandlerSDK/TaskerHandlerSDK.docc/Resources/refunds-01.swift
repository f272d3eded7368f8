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
