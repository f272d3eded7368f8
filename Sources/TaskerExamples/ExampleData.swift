import TaskerWorker

// The data the example handlers read and write, as `Codable` types decoded by the SDK
// (`StepContext.input(as:)`, `configuration(as:)`, `dependencyResult(of:as:)`) and encoded by
// `StepHandlerResult.success(encoding:)`. Numbers are `Int64`: a value that is missing, not an
// integer, or does not fit (`1e300`) fails the step permanently naming its key path
// (`cannot decode context.number: …`), and never traps.

/// `{"number": …}`: the task context of the linear, diamond, tree and retry workflows.
struct NumberInput: Decodable {
    let number: Int64
}

/// `{"amount": …}`: the task context of the decision workflow.
struct AmountInput: Decodable {
    let amount: Int64
}

/// `{"item_count": …}`: the task context of the batch workflow.
struct ItemCountInput: Decodable {
    let itemCount: Int64

    enum CodingKeys: String, CodingKey { case itemCount = "item_count" }
}

/// `{"value": …}`: the result of most example steps, read back by their dependents.
struct StepValue: Codable {
    let value: Int64
}

/// `{"value": …, "verified": true}`: the result of a step that checked its dependencies.
struct VerifiedValue: Encodable {
    let value: Int64
    let verified = true
}

/// A handler configuration (`handler.initialization`) of one integer, such as `{"addend": 5}`.
struct AddendConfig: Decodable { let addend: Int64 }
struct FactorConfig: Decodable { let factor: Int64 }
struct OffsetConfig: Decodable { let offset: Int64 }
struct ThresholdConfig: Decodable { let threshold: Int64 }

/// `handler.initialization` of the tree's leaves: the branch they read and their factor.
struct LeafConfig: Decodable {
    let parent: String
    let factor: Int64
}

/// `handler.initialization` of `examples.batch.analyze`.
struct BatchAnalyzerConfig: Decodable {
    let batchSize: Int64
    let maxWorkers: Int64
    let workerTemplateName: String?

    enum CodingKeys: String, CodingKey {
        case batchSize = "batch_size"
        case maxWorkers = "max_workers"
        case workerTemplateName = "worker_template_name"
    }
}

/// The result of an approval step of the decision workflow.
struct Approval: Codable {
    let value: Int64
    let approvedBy: String

    enum CodingKeys: String, CodingKey {
        case value
        case approvedBy = "approved_by"
    }
}

/// The result of `examples.batch.aggregate`.
struct BatchTotal: Encodable {
    let value: Int64
    let processed: Int64
    let workers: Int64
}

/// `handler.initialization` of `examples.retry.fetch`.
struct RetryConfig: Decodable {
    let backoffSeconds: Int64?

    enum CodingKeys: String, CodingKey { case backoffSeconds = "backoff_seconds" }
}

/// The result of `examples.retry.fetch`: its value and the attempt that produced it.
struct FetchResult: Codable {
    let value: Int64
    let attempts: Int64
}

/// The part of a batch worker's result the aggregator adds up (`sum`, absent for a no-op worker).
struct BatchWorkerSum: Decodable {
    let sum: Int64?
}
