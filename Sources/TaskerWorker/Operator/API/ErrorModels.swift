import Foundation
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres

/// The error body the REST handlers send (upstream `ErrorResponse`):
/// `{"error","message","timestamp","request_id"}`. Used for the readiness 503 and the template 404/500.
struct ErrorResponse: Codable, Sendable, Equatable {
    /// The error kind, one of `ErrorResponse.Kind`'s raw values.
    package var error: String
    package var message: String
    package var timestamp: Date
    package var requestID: String?

    /// The kinds upstream sends.
    package enum Kind: String, Sendable {
        case serviceUnavailable = "service_unavailable"
        case templateNotFound = "template_not_found"
        case handlerMetadataNotFound = "handler_metadata_not_found"
        case internalError = "internal_error"
    }

    package init(_ kind: Kind, message: String, timestamp: Date = Date(), requestID: String?) {
        self.error = kind.rawValue
        self.message = message
        self.timestamp = timestamp
        self.requestID = requestID
    }

    enum CodingKeys: String, CodingKey {
        case error, message, timestamp
        case requestID = "request_id"
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(error, forKey: .error)
        try c.encode(message, forKey: .message)
        try c.encode(timestamp, forKey: .timestamp)
        try c.encode(requestID, forKey: .requestID)
    }
}

/// What the operator surface (REST and gRPC bodies, health messages) says about a failure: its class
/// only, never the database's own text, the SQL or a connection string. The detail goes to the
/// worker's log, under the request id the body names.
enum OperatorErrorText {
    /// `database unavailable`, `database busy`, `database error (SQLSTATE 42P01)` or `internal error`.
    package static func summary(_ error: any Error) -> String {
        guard let error = error as? PostgresError else { return "internal error" }
        switch error.kind {
        case .connectionFailed, .connectionClosed, .shutdown, .cancelled: return "database unavailable"
        case .acquireTimeout: return "database busy (no connection free in time)"
        case .server:
            if error.isConnectionLoss { return "database unavailable" }
            return error.sqlState.map { "database error (SQLSTATE \($0))" } ?? "database error"
        case .decoding, .usage: return "internal error"
        }
    }

    /// The text a log line may carry for `error`: its full description with credentials hidden.
    static func logDetail(_ error: any Error) -> String {
        Redaction.redactCredentials("\(error)")
    }
}
