import Foundation
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Why the FFI dispatch channel refused a completion or checkpoint (the C ABI maps each case to
/// its status code; the description is the last-error message).
package enum ForeignDispatchError: Error, Equatable, CustomStringConvertible {
    /// Malformed input: not JSON, the wrong shape, a field of the wrong type (the text names it).
    case invalidArgument(String)
    /// The event id names no pending event; the text says whether it timed out, was abandoned at
    /// the shutdown drain deadline, was never polled, or is unknown.
    case unknownEvent(String)

    package var description: String {
        switch self {
        case .invalidArgument(let text), .unknownEvent(let text): text
        }
    }

    static func gone(_ id: UUID, _ reason: ForeignDispatchState<ForeignStepEvent>.Gone, timeout: Duration) -> ForeignDispatchError {
        let event = "event \(id.uuidString.lowercased())"
        switch reason {
        case .timedOut:
            return .unknownEvent(
                "\(event) timed out: it was not completed within completion_timeout_ms (\(timeout.inMilliseconds) ms) and its step got a retryable handler_timeout result; this late completion is refused"
            )
        case .drained:
            return .unknownEvent(
                "\(event) was abandoned at the worker's shutdown drain deadline (its step got a retryable handler_timeout result); this late completion is refused"
            )
        case .notPolled:
            return .unknownEvent("\(event) has not been polled yet")
        case .unknown:
            return .unknownEvent("\(event) names no pending step event (never issued, or already completed)")
        }
    }
}

extension ForeignDispatchChannel {
    /// `complete(eventID:result:)` from the C ABI's text: the id and a `StepExecutionResult`-shaped
    /// JSON object (missing fields take their defaults; `step_uuid` must be the event's step), stored
    /// as sent, as upstream's worker stores it (tasker-py's `permanent_error`/`retryable_error`, null
    /// `result` and `orchestration_metadata`, no `worker_id`). One addition, for SDKs that give
    /// retryability only in `error`: a failure without `metadata.retryable` (the flag orchestration
    /// reads) takes `error.retryable` (upstream would store `false` and never retry it).
    package func complete(eventID: String, resultJSON: String) throws(ForeignDispatchError) {
        let id = try Self.eventID(eventID)
        let value: JSONValue
        var result: StepExecutionResult
        do {
            // Held to the read limit here; the completion's writer holds the result to the value
            // limit and stores a `result_not_storable` error in its place when it is deeper.
            value = try UntrustedJSON.decode(JSONValue.self, from: resultJSON, what: "result_json")
        } catch {
            throw .invalidArgument("result_json is not JSON: \(Self.describe(error))")
        }
        guard case .object = value else { throw .invalidArgument("result_json is not a JSON object") }
        do {
            result = try StepExecutionResult.decode(value)
        } catch {
            throw .invalidArgument("result_json is not a StepExecutionResult object: \(Self.describe(error))")
        }
        if let error = result.error, value["metadata"]?["retryable"]?.boolValue == nil {
            result.metadata.retryable = error.retryable
        }
        try complete(eventID: id, result: result)
    }

    /// `checkpointYield(eventID:stepUUID:yield:)` from the C ABI's text:
    /// `{"step_uuid","cursor","items_processed","accumulated_results"}`.
    package func checkpointYield(eventID: String, checkpointJSON: String) throws(ForeignDispatchError) {
        let id = try Self.eventID(eventID)
        let value: JSONValue
        do {
            value = try UntrustedJSON.decode(
                JSONValue.self, from: checkpointJSON, limit: UntrustedJSON.maximumValueDepth, what: "checkpoint_json")
        } catch {
            throw .invalidArgument("checkpoint_json is not JSON: \(Self.describe(error))")
        }
        guard case .object(let fields) = value else { throw .invalidArgument("checkpoint_json is not a JSON object") }
        guard let stepText = fields["step_uuid"]?.stringValue, let stepUUID = UUID(uuidString: stepText) else {
            throw .invalidArgument("checkpoint_json.step_uuid is missing or not a UUID")
        }
        let items: Int
        switch fields["items_processed"] {
        case nil, .null?: items = 0
        case .int(let count)? where count >= 0 && count <= Int64(Int.max): items = Int(count)
        default: throw .invalidArgument("checkpoint_json.items_processed is not a non-negative integer")
        }
        let accumulated = fields["accumulated_results"].flatMap { $0.isNull ? nil : $0 }
        let yield = CheckpointYield(cursor: fields["cursor"] ?? .null, itemsProcessed: items, accumulatedResults: accumulated)
        try checkpointYield(eventID: id, stepUUID: stepUUID, yield: yield)
    }

    static func eventID(_ text: String) throws(ForeignDispatchError) -> UUID {
        guard let id = UUID(uuidString: text) else {
            throw .invalidArgument("event_id is not a UUID: \(text.prefix(64))")
        }
        return id
    }

    /// A decoding error in one line, naming the field.
    package static func describe(_ error: any Error) -> String {
        guard let decoding = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return keys.isEmpty ? "" : " at \(keys.joined(separator: "."))"
        }
        switch decoding {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(context.debugDescription)\(path(context))"
        case .keyNotFound(let key, let context):
            return "missing key \(key.stringValue)\(path(context))"
        @unknown default:
            return "\(decoding)"
        }
    }
}
