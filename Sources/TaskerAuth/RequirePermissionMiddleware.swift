import Foundation
import HTTPTypes
import Hummingbird
import TaskerHTTP

/// Hummingbird middleware that lets a request through only if it authenticates and has one permission.
///
/// Add it to the route groups that need a permission; routes outside those groups (health, metrics,
/// docs) stay open. With auth disabled, every request passes.
/// ```swift
/// router.group("v1/templates")
///     .add(middleware: RequirePermissionMiddleware(authenticator: auth, permission: .templatesRead))
/// ```
/// Refusals use the upstream shapes: 401 `{"error":{"code":"AUTHENTICATION_FAILED","message":…}}` and
/// 403 `{"error":{"code":"AUTHORIZATION_FAILED","message":"Missing required permission: <perm>"}}`, with
/// `x-auth-failure-reason`, `x-auth-failure-severity` and, for medium/high severity, `Retry-After`.
package struct RequirePermissionMiddleware<Context: RequestContext>: RouterMiddleware {
    private let authenticator: WorkerAuthenticator
    private let permission: String
    private let apiKeyField: HTTPField.Name

    /// Guards the routes behind this middleware with `permission`.
    package init(authenticator: WorkerAuthenticator, permission: WorkerPermission) {
        self.init(authenticator: authenticator, permissionNamed: permission.rawValue)
    }

    /// Guards the routes behind this middleware with the upstream permission `permission` (e.g. `tasks:read`).
    package init(authenticator: WorkerAuthenticator, permissionNamed permission: String) {
        self.authenticator = authenticator
        self.permission = permission
        // The header name was validated when the authenticator was built; the fallback is unreachable.
        self.apiKeyField = HTTPField.Name(authenticator.apiKeyHeader) ?? HTTPField.Name("X-API-Key")!
    }

    /// Checks the request; calls `next` or returns the 401/403 response.
    package func handle(
        _ request: Request, context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let credentials = AuthCredentials(
            authorizationBytes: Self.firstValue(of: .authorization, in: request.headers),
            apiKeyBytes: Self.firstValue(of: apiKeyField, in: request.headers))
        switch await authenticator.authorize(credentials, forPermissionNamed: permission) {
        case .success:
            return try await next(request, context)
        case .failure(let failure):
            return failure.response()
        }
    }

    /// The raw bytes of the first field named `name` (kept raw so non-ASCII values can be detected).
    static func firstValue(of name: HTTPField.Name, in headers: HTTPFields) -> [UInt8]? {
        headers[fields: name].first.map { field in field.withUnsafeBytesOfValue { Array($0) } }
    }
}

extension AuthFailure {
    /// The HTTP status: 403 for `forbidden`, else 401.
    var httpStatus: HTTPResponse.Status { isForbidden ? .forbidden : .unauthorized }

    /// The upstream `error.code`: `AUTHORIZATION_FAILED` for `forbidden`, else `AUTHENTICATION_FAILED`.
    package var errorCode: String { apiErrorCode.rawValue }

    var apiErrorCode: APIErrorCode { isForbidden ? .authorizationFailed : .authenticationFailed }

    /// The upstream response: status, `{"error":{"code","message"}}` (application/json), and the
    /// `x-auth-failure-reason`, `x-auth-failure-severity` and `Retry-After` headers.
    package func response() -> Response {
        var response = APIErrorResponse.make(apiErrorCode, message: message)
        response.headers[Self.reasonField] = kind.rawValue
        response.headers[Self.severityField] = severity.rawValue
        if let seconds = severity.retryAfterSeconds { response.headers[.retryAfter] = String(seconds) }
        return response
    }

    package static let reasonField = HTTPField.Name("x-auth-failure-reason")!
    package static let severityField = HTTPField.Name("x-auth-failure-severity")!
}
