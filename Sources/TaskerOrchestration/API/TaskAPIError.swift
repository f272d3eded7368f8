import Foundation
import TaskerAuth
import TaskerHTTP

/// Why a task API call (REST or `tasker-dev task`) was refused: upstream's `ApiError` code
/// (`APIErrorCode`, the one list of codes and statuses the worker's REST API uses too) and a message
/// naming what was wrong and where. The task API answers with `BAD_REQUEST` (a bad filter, page, body
/// or a task that cannot be cancelled), `INVALID_UUID` (a path segment that is not a uuid),
/// `NOT_FOUND` (no such task, step, DLQ entry or template), `CONFLICT` (a task with the same identity
/// exists), `SERVICE_UNAVAILABLE` (no database connection free within ``TaskQueries/connectionWait``;
/// sent with `Retry-After`) and `DATABASE_ERROR` (details in the log only).
public struct TaskAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    package var code: APIErrorCode
    public var message: String
    /// Seconds a client should wait before trying again (the `Retry-After` header), when it should.
    public var retryAfterSeconds: Int?

    package init(_ code: APIErrorCode, _ message: String, retryAfterSeconds: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// `CODE: message`.
    public var description: String { "\(code.rawValue): \(message)" }

    /// A path or argument that must be a uuid; at most 64 characters of it are echoed.
    public static func parseUUID(_ text: String, what: String) throws(TaskAPIError) -> UUID {
        guard let uuid = UUID(uuidString: text) else {
            throw TaskAPIError(.invalidUUID, "\(what) is not a uuid: \(String(text.prefix(64)).debugDescription)")
        }
        return uuid
    }
}
