import Foundation
import TaskerHTTP
import TaskerModel
import TaskerPostgres

/// An operator's action on one workflow step: the body of `PATCH /v1/tasks/{uuid}/workflow_steps/{step_uuid}`
/// (upstream `StepManualAction`, serde `tag = "action_type"`, snake_case):
///
/// | `action_type` | fields | the step | from |
/// |---|---|---|---|
/// | `reset_for_retry` | `reason`, `reset_by` | `→ pending`, attempts from 0 again, backoff cleared | `error` |
/// | `resolve_manually` | `reason`, `resolved_by` | `→ resolved_manually` (its dependents may run) | any unfinished state |
/// | `complete_manually` | `completion_data {result, metadata?}`, `reason`, `completed_by` | `→ complete` with a `StepExecutionResult` (`success: true`, `status: "completed"`, `result`, `metadata.custom` with `manually_completed`, `completed_by`, `completion_reason` and the operator's metadata) | any unfinished state |
///
/// Upstream lets `resolve_manually` and `complete_manually` move a step out of any state; here a step
/// already `complete`, `resolved_manually` or `cancelled` is refused: its dependents may have consumed
/// what it left, and rewriting it would change history under them.
///
/// Hostile input: the body is read through `UntrustedJSON` (nesting bounded), every string is checked
/// (present, a string, not blank, no NUL, at most ``maxReasonCharacters`` / ``maxOperatorCharacters``),
/// `result` and `metadata` hold no NUL anywhere (PostgreSQL's jsonb cannot store it), and an unknown
/// `action_type` is refused naming the three known ones. Unknown keys are ignored, as serde does.
public enum StepManualAction: Sendable, Equatable {
    case resetForRetry(reason: String, resetBy: String)
    case resolveManually(reason: String, resolvedBy: String)
    /// `result` is the step's result; `metadata` the operator's (an object's members go to
    /// `metadata.custom`, anything else under `operator_metadata`, as upstream).
    case completeManually(result: JSONValue, metadata: JSONValue?, reason: String, completedBy: String)

    /// The `action_type` values, in upstream's order.
    public static let actionTypes = ["reset_for_retry", "resolve_manually", "complete_manually"]
    /// The most characters of `reason` (ours: it is stored in the step's transition metadata).
    static let maxReasonCharacters = 1_000
    /// The most characters of `reset_by`, `resolved_by` and `completed_by` (as `tasks_dlq.resolved_by`).
    static let maxOperatorCharacters = 255

    /// Reads the request body (a JSON object).
    /// - Throws: ``TaskAPIError`` `BAD_REQUEST` naming what is missing or wrong.
    public init(body: Data) throws(TaskAPIError) {
        let document: JSONValue
        do {
            document = try UntrustedJSON.decode(
                JSONValue.self, from: body, limit: UntrustedJSON.maximumValueDepth, what: "the step action body")
        } catch let error as JSONNestingError {
            throw TaskAPIError(.badRequest, "Invalid JSON body: \(error)")
        } catch {
            throw TaskAPIError(.badRequest, "Invalid JSON body: not a JSON document")
        }
        try self.init(json: document)
    }

    /// Reads an already parsed body.
    init(json document: JSONValue) throws(TaskAPIError) {
        guard case .object(let fields) = document else {
            throw TaskAPIError(.badRequest, "Invalid JSON body: a step action is a JSON object with an \"action_type\"")
        }
        let type = try Self.text(fields, "action_type", limit: 64)
        switch type {
        case "reset_for_retry":
            self = .resetForRetry(
                reason: try Self.text(fields, "reason", limit: Self.maxReasonCharacters),
                resetBy: try Self.text(fields, "reset_by", limit: Self.maxOperatorCharacters))
        case "resolve_manually":
            self = .resolveManually(
                reason: try Self.text(fields, "reason", limit: Self.maxReasonCharacters),
                resolvedBy: try Self.text(fields, "resolved_by", limit: Self.maxOperatorCharacters))
        case "complete_manually":
            guard case .object(let data)? = fields["completion_data"] else {
                throw TaskAPIError(
                    .badRequest,
                    fields["completion_data"] == nil
                        ? "Invalid JSON body: missing field \"completion_data\" (an object with \"result\")"
                        : "Invalid JSON body: field \"completion_data\" must be an object with \"result\"")
            }
            guard let result = data["result"] else {
                throw TaskAPIError(.badRequest, "Invalid JSON body: missing field \"completion_data.result\"")
            }
            // A missing member and `null` both mean no metadata.
            let metadata: JSONValue? =
                switch data["metadata"] {
                case .none, .some(JSONValue.null): nil
                case .some(let value): value
                }
            for (name, value) in [("result", result), ("metadata", metadata ?? .null)] {
                if let path = TaskRequest.pathOfNUL(in: value) {
                    throw TaskAPIError(
                        .badRequest,
                        "field \"completion_data.\(name)\(path)\" contains a NUL character (\\u0000), which PostgreSQL's jsonb cannot store"
                    )
                }
            }
            self = .completeManually(
                result: result, metadata: metadata,
                reason: try Self.text(fields, "reason", limit: Self.maxReasonCharacters),
                completedBy: try Self.text(fields, "completed_by", limit: Self.maxOperatorCharacters))
        default:
            throw TaskAPIError(
                .badRequest,
                "unknown action_type \(String(type.prefix(64)).debugDescription): one of \(Self.actionTypes.joined(separator: ", "))")
        }
    }

    /// The `action_type`.
    public var actionType: String {
        switch self {
        case .resetForRetry: "reset_for_retry"
        case .resolveManually: "resolve_manually"
        case .completeManually: "complete_manually"
        }
    }

    /// The operator's field and name (`reset_by`, `resolved_by` or `completed_by`).
    var performer: (field: String, name: String) {
        switch self {
        case .resetForRetry(_, let by): ("reset_by", by)
        case .resolveManually(_, let by): ("resolved_by", by)
        case .completeManually(_, _, _, let by): ("completed_by", by)
        }
    }

    /// Why the operator acted.
    var reason: String {
        switch self {
        case .resetForRetry(let reason, _), .resolveManually(let reason, _), .completeManually(_, _, let reason, _): reason
        }
    }

    /// The state the action moves the step to.
    var targetState: StepState {
        switch self {
        case .resetForRetry: .pending
        case .resolveManually: .resolvedManually
        case .completeManually: .complete
        }
    }

    /// Whether the action may move a step out of `state`.
    func allows(_ state: StepState) -> Bool {
        switch self {
        case .resetForRetry: state == .error
        case .resolveManually, .completeManually: !Self.finished.contains(state)
        }
    }

    /// The states no action moves a step out of.
    static let finished: Set<StepState> = [.complete, .resolvedManually, .cancelled]

    /// The states the action accepts, for a refusal's message.
    var acceptedStates: String {
        switch self {
        case .resetForRetry: "error"
        case .resolveManually, .completeManually:
            StepState.allCases.filter { !Self.finished.contains($0) }.map(\.rawValue).joined(separator: ", ")
        }
    }

    /// The `StepExecutionResult` document `complete_manually` stores as the step's `results` (upstream's
    /// `StepExecutionResult::success(step, result, 0, custom)`); nil for the other actions.
    /// - Throws: ``TaskAPIError`` `BAD_REQUEST` when the result and metadata are nested too deeply to be
    ///   stored and read back (`UntrustedJSON.maximumValueDepth`, the step's own envelope included).
    func resultsJSON(stepUUID: UUID, now: Date = Date()) throws(TaskAPIError) -> String? {
        guard case .completeManually(let result, let metadata, let reason, let completedBy) = self else { return nil }
        var custom: [String: JSONValue] = [:]
        if case .object(let members)? = metadata {
            custom = members
        } else if let metadata {
            custom["operator_metadata"] = metadata
        }
        custom["manually_completed"] = true
        custom["completed_by"] = .string(completedBy)
        custom["completion_reason"] = .string(reason)
        let stored = StepExecutionResult.success(
            stepUUID: stepUUID, result: result, startedAt: now, completedAt: now, workerID: nil, hostname: nil, custom: custom)
        do {
            return try stored.storedJSON()
        } catch {
            throw TaskAPIError(.badRequest, "completion_data cannot be stored as a step result: \(error)")
        }
    }

    /// A required string field: present, a string, not blank, no NUL, at most `limit` characters.
    private static func text(_ fields: [String: JSONValue], _ name: String, limit: Int) throws(TaskAPIError) -> String {
        guard let value = fields[name] else { throw TaskAPIError(.badRequest, "Invalid JSON body: missing field \"\(name)\"") }
        guard case .string(let text) = value else {
            throw TaskAPIError(.badRequest, "Invalid JSON body: field \"\(name)\" must be a string")
        }
        if text.utf8.contains(0) {
            throw TaskAPIError(.badRequest, "field \"\(name)\" contains a NUL character (\\u0000), which PostgreSQL cannot store")
        }
        if text.unicodeScalars.allSatisfy({ $0.properties.isWhitespace }) {
            throw TaskAPIError(.badRequest, "field \"\(name)\" must not be empty")
        }
        let characters = text.unicodeScalars.count
        if characters > limit {
            throw TaskAPIError(.badRequest, "field \"\(name)\" is too long: \(characters) characters, at most \(limit)")
        }
        return text
    }
}
