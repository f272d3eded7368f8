import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The error body of the API layer (upstream `ApiError` on the wire): `{"error":{"code","message"}}`,
/// for unknown paths, bad parameters, timeouts, auth failures and unexpected errors.
struct APIErrorBody: Codable, Sendable, Equatable {
    package var error: Detail

    /// `code` is upstream's variant name in UPPER_SNAKE_CASE (`NOT_FOUND`, `BAD_REQUEST`, `TIMEOUT`, …).
    struct Detail: Codable, Sendable, Equatable {
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
    /// A path segment that must be a uuid is not one (the orchestration's task API).
    case invalidUUID = "INVALID_UUID"
    case unauthorized = "UNAUTHORIZED"
    case authenticationFailed = "AUTHENTICATION_FAILED"
    case forbidden = "FORBIDDEN"
    case authorizationFailed = "AUTHORIZATION_FAILED"
    case notFound = "NOT_FOUND"
    case timeout = "TIMEOUT"
    case conflict = "CONFLICT"
    /// A request body over the server's limit.
    case payloadTooLarge = "PAYLOAD_TOO_LARGE"
    /// A state-changing request whose body is not `application/json` (`CrossSiteRequestGuard`).
    case unsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
    case internalError = "INTERNAL_ERROR"
    case databaseError = "DATABASE_ERROR"
    case serviceUnavailable = "SERVICE_UNAVAILABLE"

    /// The HTTP status code upstream sends with this code.
    package var statusCode: Int {
        switch self {
        case .badRequest, .invalidUUID: 400
        case .unauthorized, .authenticationFailed: 401
        case .forbidden, .authorizationFailed: 403
        case .notFound: 404
        case .timeout: 408
        case .conflict: 409
        case .payloadTooLarge: 413
        case .unsupportedMediaType: 415
        case .internalError, .databaseError: 500
        case .serviceUnavailable: 503
        }
    }
}

extension APIErrorCode {
    /// The code for an HTTP status (a status without a code of its own maps by class).
    package static func forStatus(_ status: Int) -> APIErrorCode {
        if let code = allCases.first(where: {
            $0.statusCode == status && $0 != .authenticationFailed
                && $0 != .authorizationFailed && $0 != .databaseError && $0 != .invalidUUID
        }) {
            return code
        }
        return status >= 500 ? .internalError : .badRequest
    }
}

/// The one builder of `{"error":{"code","message"}}` responses (worker and orchestration REST).
package enum APIErrorResponse {
    /// The body with the code's status (or `status`); keys sorted, so the bytes are upstream's (serde
    /// writes `code` before `message`) on every run.
    package static func make(_ code: APIErrorCode, message: String, status: HTTPResponse.Status? = nil) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body =
            (try? encoder.encode(APIErrorBody(code: code, message: message)))
            ?? Data(#"{"error":{"code":"INTERNAL_ERROR","message":"Internal server error"}}"#.utf8)
        return Response(
            status: status ?? HTTPResponse.Status(code: code.statusCode), headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}
