import Foundation
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Why a step's result cannot be stored as its handler made it. The step then gets, in its place, a
/// non-retryable error result (`error_type` `result_not_storable`) whose message says why, and moves
/// on (orchestration fails it for good, as for any non-retryable error).
enum ResultRefusal: Sendable, Equatable {
    /// The result does not encode as JSON (a `Double` that is NaN or infinite, arrays and objects
    /// nested deeper than `UntrustedJSON.maximumValueDepth`, the result's own envelope included).
    case unencodable(String)
    /// Its JSON is larger than `worker.result_storage.max_result_bytes`.
    case tooLarge(bytes: Int, limit: Int)
    /// The database refused it for good (`PostgresError.isPermanentDataError`).
    case refusedByDatabase(sqlState: String, message: String)

    /// The `error_type` of the result stored instead.
    package static let errorType = "result_not_storable"

    /// The refusal of `error`, when the database refused the data for good.
    package init?(_ error: any Error) {
        guard let error = error as? PostgresError, error.isPermanentDataError, let state = error.sqlState else { return nil }
        // The server's message and detail only (never the SQL, which holds the whole result).
        self = .refusedByDatabase(sqlState: state, message: error.message + (error.detail.map { " (\($0))" } ?? ""))
    }

    /// The refusal of a result that did not encode (`JSONWriter.Refusal`, which says why without
    /// repeating the value).
    package init(encoding error: any Error) {
        self = .unencodable("\(error)")
    }

    /// The message of the error result stored instead (no control characters, at most ~500 characters).
    package var message: String {
        let why: String
        switch self {
        case .unencodable(let reason):
            why = "it cannot be encoded as JSON: \(reason)"
        case .tooLarge(let bytes, let limit):
            why = "its JSON is \(bytes) bytes, more than the limit of \(limit) bytes (worker.result_storage.max_result_bytes)"
        case .refusedByDatabase(let state, let message):
            why = "the database refused it for good (SQLSTATE \(state): \(message))"
        }
        let text = "The step's result was not stored because \(why)"
        let clean = String(
            String.UnicodeScalarView(
                text.unicodeScalars.map {
                    $0.properties.generalCategory == .control ? " " : $0
                }))
        return clean.count > 500 ? String(clean.prefix(497)) + "..." : clean
    }

    /// `error.context` of the result stored instead.
    var context: [String: JSONValue] {
        switch self {
        case .unencodable: return ["reason": "unencodable"]
        case .tooLarge(let bytes, let limit):
            return ["reason": "too_large", "result_bytes": .int(Int64(bytes)), "limit_bytes": .int(Int64(limit))]
        case .refusedByDatabase(let state, _): return ["reason": "refused_by_database", "sqlstate": .string(state)]
        }
    }
}

extension StepExecutionResult {
    /// The non-retryable error result stored in place of a result that could not be stored.
    static func notStorable(
        stepUUID: UUID, refusal: ResultRefusal, workerUUID: UUID,
        now: Date = Date()
    ) -> StepExecutionResult {
        let identity = WorkerIdentity(uuid: workerUUID)
        let failure = StepFailure(
            message: refusal.message, errorType: ResultRefusal.errorType, retryable: false,
            context: refusal.context)
        return .failure(
            stepUUID: stepUUID, failure: failure, startedAt: now, completedAt: now,
            workerID: identity.workerID, hostname: identity.hostname)
    }
}

extension CompletionWrite {
    /// The write of the `result_not_storable` error result for the same step, in place of this one,
    /// with that result.
    func refused(_ refusal: ResultRefusal) throws(JSONWriter.Refusal) -> (write: CompletionWrite, result: StepExecutionResult) {
        try CompletionWrite.refusal(refusal, message: message, workerUUID: workerUUID)
    }

    /// The write of the `result_not_storable` error result for `message`'s step.
    static func refusal(
        _ refusal: ResultRefusal, message: StepMessage,
        workerUUID: UUID
    ) throws(JSONWriter.Refusal) -> (write: CompletionWrite, result: StepExecutionResult) {
        let result = StepExecutionResult.notStorable(stepUUID: message.stepUUID, refusal: refusal, workerUUID: workerUUID)
        let json = try result.storedJSON()
        return (CompletionWrite(message: message, success: false, resultJSON: json, workerUUID: workerUUID), result)
    }
}
