import Foundation
import TaskerText

/// One batch worker's range (upstream `CursorConfig`):
/// `{"batch_id":"batch_001","start_cursor":0,"end_cursor":100,"batch_size":100}`.
/// `start_cursor` is inclusive, `end_cursor` exclusive; cursors may be any JSON.
public struct CursorConfig: Codable, Sendable, Equatable {
    public var batchID: String
    public var startCursor: JSONValue
    public var endCursor: JSONValue
    public var batchSize: UInt32

    public init(batchID: String, startCursor: JSONValue, endCursor: JSONValue, batchSize: UInt32) {
        self.batchID = batchID
        self.startCursor = startCursor
        self.endCursor = endCursor
        self.batchSize = batchSize
    }

    enum CodingKeys: String, CodingKey {
        case batchID = "batch_id"
        case startCursor = "start_cursor"
        case endCursor = "end_cursor"
        case batchSize = "batch_size"
    }

    /// `batch_001`, `batch_002`, … (1-based, at least three digits).
    public static func batchID(index: Int) -> String {
        let digits = String(index + 1)
        return "batch_" + String(repeating: "0", count: max(0, 3 - digits.count)) + digits
    }

    /// Exactly `workerCount` integer ranges covering `0..<totalItems`, the remainder spread
    /// one item each over the first batches (upstream `create_cursor_configs`: 10 over 3 →
    /// 4, 3, 3). Empty when either is zero.
    public static func evenlyDistributed(totalItems: UInt64, workerCount: Int) -> [CursorConfig] {
        guard workerCount > 0, totalItems > 0 else { return [] }
        let workers = UInt64(workerCount)
        let base = totalItems / workers
        let remainder = totalItems % workers
        var configs: [CursorConfig] = []
        configs.reserveCapacity(workerCount)
        var start: UInt64 = 0
        for index in 0..<workers {
            let size = base + (index < remainder ? 1 : 0)
            let end = start + size
            configs.append(
                CursorConfig(
                    batchID: batchID(index: Int(index)), startCursor: .int(Int64(start)), endCursor: .int(Int64(end)),
                    batchSize: UInt32(clamping: size)))
            start = end
        }
        return configs
    }

    /// Fixed-size ranges of `batchSize` (the last one shorter), at most `maxBatches` of them
    /// (upstream `create_cursor_ranges`; a cap leaves the tail uncovered). Empty when
    /// `totalItems` or `batchSize` is zero.
    public static func fixedSize(totalItems: UInt64, batchSize: UInt64, maxBatches: Int? = nil) -> [CursorConfig] {
        guard batchSize > 0, totalItems > 0 else { return [] }
        var count = (totalItems + batchSize - 1) / batchSize
        if let maxBatches { count = min(count, UInt64(max(0, maxBatches))) }
        return (0..<count).map { index in
            let start = index * batchSize
            let end = min((index + 1) * batchSize, totalItems)
            return CursorConfig(
                batchID: batchID(index: Int(index)), startCursor: .int(Int64(start)),
                endCursor: .int(Int64(end)), batchSize: UInt32(clamping: end - start))
        }
    }
}

/// A batchable step's outcome, read by orchestration from `result.batch_processing_outcome`
/// (only when `status` is `completed`).
public enum BatchProcessingOutcome: Codable, Sendable, Equatable {
    /// No workers (orchestration still creates one no-op worker so convergence can run).
    case noBatches
    /// Create `workerCount` workers from `workerTemplateName`, one per cursor config
    /// (named `<template>_001`, …).
    case createBatches(workerTemplateName: String, workerCount: UInt32, cursorConfigs: [CursorConfig], totalItems: UInt64)

    /// `create_batches` with `worker_count` = the number of configs (orchestration requires
    /// them equal); ``noBatches`` when there are no configs.
    public static func batches(
        workerTemplateName: String, cursorConfigs: [CursorConfig],
        totalItems: UInt64
    ) -> BatchProcessingOutcome {
        guard !cursorConfigs.isEmpty else { return .noBatches }
        return .createBatches(
            workerTemplateName: workerTemplateName, workerCount: UInt32(cursorConfigs.count),
            cursorConfigs: cursorConfigs, totalItems: totalItems)
    }

    /// Plans batches from a template's `batch_config`: `worker_count` =
    /// `min(ceil(totalItems / batchSize), parallelism)` (no cap when `parallelism` ≤ 0), and
    /// the items spread evenly over exactly that many workers, the remainder going to the
    /// first batches. `totalItems == 0` gives ``noBatches``; fewer items than `batchSize`
    /// give a single worker.
    public static func plan(
        workerTemplateName: String, totalItems: UInt64, batchSize: UInt64,
        parallelism: Int
    ) -> BatchProcessingOutcome {
        guard totalItems > 0 else { return .noBatches }
        let size = max(1, batchSize)
        var workers = (totalItems + size - 1) / size
        if parallelism > 0 { workers = min(workers, UInt64(parallelism)) }
        let configs = CursorConfig.evenlyDistributed(totalItems: totalItems, workerCount: Int(workers))
        return batches(workerTemplateName: workerTemplateName, cursorConfigs: configs, totalItems: totalItems)
    }

    /// The cursor configs (empty for ``noBatches``).
    public var cursorConfigs: [CursorConfig] {
        if case .createBatches(_, _, let configs, _) = self { return configs }
        return []
    }

    /// `worker_count` (0 for ``noBatches``).
    public var workerCount: UInt32 {
        if case .createBatches(_, let count, _, _) = self { return count }
        return 0
    }

    /// The outcome as JSON.
    public var jsonValue: JSONValue {
        (try? JSONValue(encoding: self)) ?? .object(["type": .string("no_batches")])
    }

    /// The outcome in a result's `result.batch_processing_outcome`, if it parses.
    public static func from(_ result: StepExecutionResult) -> BatchProcessingOutcome? {
        guard let value = result.result["batch_processing_outcome"] else { return nil }
        return try? value.decode(BatchProcessingOutcome.self)
    }

    enum CodingKeys: String, CodingKey {
        case type
        case workerTemplateName = "worker_template_name"
        case workerCount = "worker_count"
        case cursorConfigs = "cursor_configs"
        case totalItems = "total_items"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "no_batches":
            self = .noBatches
        case "create_batches":
            self = .createBatches(
                workerTemplateName: try container.decode(String.self, forKey: .workerTemplateName),
                workerCount: try container.decode(UInt32.self, forKey: .workerCount),
                cursorConfigs: try container.decode([CursorConfig].self, forKey: .cursorConfigs),
                totalItems: try container.decode(UInt64.self, forKey: .totalItems))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container, debugDescription: "unknown batch outcome type \(type)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .noBatches:
            try container.encode("no_batches", forKey: .type)
        case .createBatches(let template, let count, let configs, let total):
            try container.encode("create_batches", forKey: .type)
            try container.encode(template, forKey: .workerTemplateName)
            try container.encode(count, forKey: .workerCount)
            try container.encode(configs, forKey: .cursorConfigs)
            try container.encode(total, forKey: .totalItems)
        }
    }
}

/// What orchestration stores in a batch worker's `workflow_steps.inputs` (upstream
/// `BatchWorkerInputs`): `{"cursor":{..},"batch_metadata":{"cursor_field","failure_strategy"},
/// "is_no_op":bool,"__template_step_name":..}`.
public struct BatchWorkerInputs: Codable, Sendable, Equatable {
    /// Template `batch_config` details passed to the worker.
    public struct BatchMetadata: Codable, Sendable, Equatable {
        public var cursorField: String
        /// `continue_on_failure`, `fail_fast` or `isolate`.
        public var failureStrategy: String

        public init(cursorField: String, failureStrategy: String) {
            self.cursorField = cursorField
            self.failureStrategy = failureStrategy
        }

        enum CodingKeys: String, CodingKey {
            case cursorField = "cursor_field"
            case failureStrategy = "failure_strategy"
        }
    }

    public var cursor: CursorConfig
    public var batchMetadata: BatchMetadata
    /// Set for the placeholder worker of a `no_batches` outcome: return at once.
    public var isNoOp: Bool
    public var templateStepName: String?

    public init(cursor: CursorConfig, batchMetadata: BatchMetadata, isNoOp: Bool, templateStepName: String? = nil) {
        self.cursor = cursor
        self.batchMetadata = batchMetadata
        self.isNoOp = isNoOp
        self.templateStepName = templateStepName
    }

    /// Decodes step inputs.
    public init(_ inputs: JSONValue) throws {
        self = try inputs.decode(BatchWorkerInputs.self)
    }

    enum CodingKeys: String, CodingKey {
        case cursor
        case batchMetadata = "batch_metadata"
        case isNoOp = "is_no_op"
        case templateStepName = "__template_step_name"
    }

    public var batchID: String { cursor.batchID }
    public var cursorField: String { batchMetadata.cursorField }
    /// `start_cursor` as a number (0 when not a non-negative integer).
    public var startPosition: UInt64 { cursor.startCursor.intValue.map { UInt64(max(0, $0)) } ?? 0 }
    /// `end_cursor` as a number (0 when not a non-negative integer).
    public var endPosition: UInt64 { cursor.endCursor.intValue.map { UInt64(max(0, $0)) } ?? 0 }
    /// `end - start`, never negative.
    public var totalBatchSize: UInt64 { endPosition > startPosition ? endPosition - startPosition : 0 }
}
