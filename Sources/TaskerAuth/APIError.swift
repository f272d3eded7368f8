import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The error body of the API layer (upstream `ApiError` on the wire): `{"error":{"code","message"}}`,
/// for unknown paths, bad parameters, timeouts, auth failures and unexpected errors.
package struct APIErrorBody: Codable, Sendable, Equatable {
    package var error: Detail

    /// `code` is upstream's variant name in UPPER_SNAKE_CASE (`NOT_FOUND`, `BAD_REQUEST`, `TIMEOUT`, …).
    package struct Detail: Codable, Sendable, Equatable {
        package var code: String
        package var message: String
    }

    package init(code: APIErrorCode, message: String) {
        error = Detail(code: code.rawValue, message: message)
    }
}

/// The `ApiError` codes and the HTTP status each is sent with.
package enum APIErrorCode: String, Sendable, CaseIterable {
    case badRequest = "BAD_REQUEST"
    case unauthorized = "UNAUTHORIZED"
    case authenticationFailed = "AUTHENTICATION_FAILED"
    case forbidden = "FORBIDDEN"
    case authorizationFailed = "AUTHORIZATION_FAILED"
    case notFound = "NOT_FOUND"
    case timeout = "TIMEOUT"
    case conflict = "CONFLICT"
    case internalError = "INTERNAL_ERROR"
    case databaseError = "DATABASE_ERROR"
    case serviceUnavailable = "SERVICE_UNAVAILABLE"

    /// The HTTP status code upstream sends with this code.
    package var statusCode: Int {
        switch self {
        case .badRequest: 400
        case .unauthorized, .authenticationFailed: 401
        case .forbidden, .authorizationFailed: 403
        case .notFound: 404
        case .timeout: 408
        case .conflict: 409
        case .internalError, .databaseError: 500
        case .serviceUnavailable: 503
        }
    }
}

/// The one builder of `{"error":{"code","message"}}` responses (worker and orchestration REST).
package enum APIErrorResponse {
    /// The body with the code's status; keys sorted, so the bytes are upstream's (serde writes `code`
    /// before `message`) on every run.
    package static func make(_ code: APIErrorCode, message: String) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body =
            (try? encoder.encode(APIErrorBody(code: code, message: message)))
            ?? Data(#"{"error":{"code":"INTERNAL_ERROR","message":"Internal server error"}}"#.utf8)
        return Response(
            status: HTTPResponse.Status(code: code.statusCode), headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}
