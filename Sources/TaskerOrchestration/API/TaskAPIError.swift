import Foundation

/// Why a task API call (REST or `tasker-dev task`) was refused, with upstream's `ApiError` code and a
/// message naming what was wrong and where.
public struct TaskAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Upstream's `ApiError` variants the task API answers with.
    public enum Kind: String, Sendable, Equatable {
        /// 400 `BAD_REQUEST`: a bad filter, page, body or a task that cannot be cancelled.
        case badRequest = "BAD_REQUEST"
        /// 400 `INVALID_UUID`: a path segment that is not a uuid.
        case invalidUUID = "INVALID_UUID"
        /// 404 `NOT_FOUND`: no such task, step, DLQ entry or template.
        case notFound = "NOT_FOUND"
        /// 409 `CONFLICT`: a task with the same identity exists.
        case conflict = "CONFLICT"
        /// 500 `DATABASE_ERROR`: the database failed (details in the log only).
        case databaseError = "DATABASE_ERROR"

        /// The HTTP status upstream sends with this code.
        public var statusCode: Int {
            switch self {
            case .badRequest, .invalidUUID: 400
            case .notFound: 404
            case .conflict: 409
            case .databaseError: 500
            }
        }
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// `CODE: message`.
    public var description: String { "\(kind.rawValue): \(message)" }

    /// A path or argument that must be a uuid; at most 64 characters of it are echoed.
    public static func parseUUID(_ text: String, what: String) throws(TaskAPIError) -> UUID {
        guard let uuid = UUID(uuidString: text) else {
            throw TaskAPIError(.invalidUUID, "\(what) is not a uuid: \(String(text.prefix(64)).debugDescription)")
        }
        return uuid
    }
}
