import Foundation
import TaskerHTTP
import TaskerModel
import TaskerPostgres

/// The body of `PATCH /v1/dlq/entry/{dlq_entry_uuid}` (upstream `UpdateInvestigationRequest`): every
/// field optional (missing or `null`: the entry keeps what it has), as upstream's
/// `DlqEntry::update_investigation` applies them:
///
/// - `resolution_status`: `Pending`, `ManuallyResolved`, `PermanentlyFailed`, `Cancelled` (serde's
///   spelling, upstream's only one) or the database's (`manually_resolved`, as upstream's guide writes
///   it); a status also sets `resolution_timestamp` to now;
/// - `resolution_notes` (at most ``maxNotesCharacters``), `resolved_by` (at most
///   ``maxResolvedByCharacters``, its column's size): strings without NUL;
/// - `metadata`: any JSON without NUL, replacing the entry's. When it is an object with
///   `time_in_state_minutes`, that must be an integer: `tasker.v_dlq_investigation_queue` casts it to
///   `integer`, and one entry with anything else would fail the whole queue for everyone.
///
/// The DLQ tracks investigations only: the task and its steps are changed through the step actions
/// (`PATCH /v1/tasks/{uuid}/workflow_steps/{step_uuid}`), never here.
struct DLQInvestigationUpdate: Sendable, Equatable {
    var status: DLQResolutionStatus?
    var notes: String?
    var resolvedBy: String?
    /// The metadata's JSON text, or nil to keep the entry's.
    var metadata: String?

    /// The most characters of `resolution_notes` (its column is `text`: the bound is ours).
    static let maxNotesCharacters = 10_000
    /// The most characters of `resolved_by` (`character varying(255)`).
    static let maxResolvedByCharacters = 255

    init(status: DLQResolutionStatus? = nil, notes: String? = nil, resolvedBy: String? = nil, metadata: String? = nil) {
        self.status = status
        self.notes = notes
        self.resolvedBy = resolvedBy
        self.metadata = metadata
    }

    /// Reads the request body.
    /// - Throws: ``TaskAPIError`` `BAD_REQUEST` naming the field that is wrong and how.
    init(body: Data) throws(TaskAPIError) {
        let document: JSONValue
        do {
            document = try UntrustedJSON.decode(
                JSONValue.self, from: body, limit: UntrustedJSON.maximumValueDepth, what: "the DLQ update body")
        } catch let error as JSONNestingError {
            throw TaskAPIError(.badRequest, "Invalid JSON body: \(error)")
        } catch {
            throw TaskAPIError(.badRequest, "Invalid JSON body: not a JSON document")
        }
        guard case .object(let fields) = document else {
            throw TaskAPIError(.badRequest, "Invalid JSON body: a DLQ investigation update is a JSON object")
        }
        self.init()
        if let text = try Self.text(fields, "resolution_status", limit: 64) {
            guard let status = DLQResolutionStatus(spelledEitherWay: text) else {
                throw TaskAPIError(
                    .badRequest,
                    "resolution_status \(String(text.prefix(64)).debugDescription) is not one of \(DLQResolutionStatus.accepted)")
            }
            self.status = status
        }
        notes = try Self.text(fields, "resolution_notes", limit: Self.maxNotesCharacters)
        resolvedBy = try Self.text(fields, "resolved_by", limit: Self.maxResolvedByCharacters)
        if let value = fields["metadata"], value != .null {
            if let path = TaskRequest.pathOfNUL(in: value) {
                throw TaskAPIError(
                    .badRequest, "field \"metadata\(path)\" contains a NUL character (\\u0000), which PostgreSQL's jsonb cannot store")
            }
            if let minutes = value["time_in_state_minutes"] {
                guard case .int(let number) = minutes, Int32(exactly: number) != nil else {
                    throw TaskAPIError(
                        .badRequest,
                        "field \"metadata.time_in_state_minutes\" must be an integer (the investigation queue reads it as one)")
                }
            }
            do {
                metadata = try value.jsonString()
            } catch {
                throw TaskAPIError(.badRequest, "field \"metadata\" cannot be stored: \(error)")
            }
        }
    }

    /// An optional string field: absent or null is nil; else a string without NUL of at most `limit` characters.
    private static func text(_ fields: [String: JSONValue], _ name: String, limit: Int) throws(TaskAPIError) -> String? {
        guard let value = fields[name], value != .null else { return nil }
        guard case .string(let text) = value else {
            throw TaskAPIError(.badRequest, "Invalid JSON body: field \"\(name)\" must be a string or null")
        }
        if text.utf8.contains(0) {
            throw TaskAPIError(.badRequest, "field \"\(name)\" contains a NUL character (\\u0000), which PostgreSQL cannot store")
        }
        let characters = text.unicodeScalars.count
        if characters > limit {
            throw TaskAPIError(.badRequest, "field \"\(name)\" is too long: \(characters) characters, at most \(limit)")
        }
        return text
    }
}
