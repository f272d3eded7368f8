import Foundation
import TaskerStepModel

extension StepHandlerResult {
    /// The error code of batch failures.
    public static let batchErrorCode = "BATCH_ERROR"

    /// A batchable step's success: `{"batch_processing_outcome":{..},"worker_count","total_items",
    /// "worker_template"}`. With no configs it is ``noBatches(reason:)``.
    public static func batchAnalyzerSuccess(
        workerTemplate: String, cursorConfigs: [CursorConfig],
        totalItems: UInt64
    ) -> StepHandlerResult {
        guard !cursorConfigs.isEmpty else { return noBatches(reason: "empty_dataset") }
        let outcome = BatchProcessingOutcome.batches(
            workerTemplateName: workerTemplate,
            cursorConfigs: cursorConfigs, totalItems: totalItems)
        return batchOutcome(outcome, extra: [:])
    }

    /// A result carrying `outcome` at `batch_processing_outcome`, plus `extra` members.
    public static func batchOutcome(_ outcome: BatchProcessingOutcome, extra: [String: JSONValue]) -> StepHandlerResult {
        var result = extra
        result["batch_processing_outcome"] = outcome.jsonValue
        if case .createBatches(let template, let count, _, let total) = outcome {
            result["worker_count"] = .int(Int64(count))
            result["total_items"] = .int(Int64(clamping: total))
            result["worker_template"] = .string(template)
        }
        return .success(.object(result))
    }

    /// A batchable step that needs no workers: `{"batch_processing_outcome":{"type":"no_batches"},"reason":..}`.
    public static func noBatches(reason: String) -> StepHandlerResult {
        batchOutcome(.noBatches, extra: ["reason": .string(reason)])
    }

    /// A batch worker's summary: `{processed,succeeded,failed,skipped,success_rate}`
    /// (`success_rate` = succeeded / processed × 100, 0 when nothing was processed), with
    /// `batch_processed`/`batch_succeeded`/`batch_failed` in `metadata.custom`.
    public static func batchWorkerSuccess(
        processed: UInt64, succeeded: UInt64, failed: UInt64,
        skipped: UInt64, extra: [String: JSONValue] = [:]
    ) -> StepHandlerResult {
        var result = extra
        result["processed"] = .int(Int64(clamping: processed))
        result["succeeded"] = .int(Int64(clamping: succeeded))
        result["failed"] = .int(Int64(clamping: failed))
        result["skipped"] = .int(Int64(clamping: skipped))
        result["success_rate"] = .double(processed > 0 ? Double(succeeded) / Double(processed) * 100 : 0)
        let custom: [String: JSONValue] = [
            "batch_processed": .int(Int64(clamping: processed)),
            "batch_succeeded": .int(Int64(clamping: succeeded)),
            "batch_failed": .int(Int64(clamping: failed)),
        ]
        return .success(.object(result), metadata: custom)
    }

    /// The immediate success of a no-op (placeholder) batch worker.
    public static func noOpBatchWorker(_ inputs: BatchWorkerInputs) -> StepHandlerResult {
        .success(
            .object([
                "no_op": .bool(true), "reason": .string("NoBatches scenario"),
                "batch_id": .string(inputs.batchID),
            ]),
            metadata: ["no_op": .bool(true)])
    }

    /// A failed batch step: error code `BATCH_ERROR`.
    public static func batchFailure(
        message: String, errorType: String = "batch_error",
        retryable: Bool
    ) -> StepHandlerResult {
        .failure(StepFailure(message: message, errorType: errorType, errorCode: batchErrorCode, retryable: retryable))
    }
}
