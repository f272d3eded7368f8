import Hummingbird
import TaskerAuth

/// The request context of the worker's REST server: Hummingbird's core storage plus the request id
/// `RequestIDMiddleware` settles on (echoed from `x-request-id` or generated).
struct WorkerRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The id sent back in `x-request-id` and in `ErrorResponse.request_id`.
    package var requestID: String?

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        requestID = nil
    }
}

/// Supplies the middleware that guards the routes needing `permission` (nil leaves them open).
/// Each protected route sits in its own group, so this is the one place auth plugs in.
typealias WebAuthorizer = @Sendable (WorkerPermission) -> (any MiddlewareProtocol<Request, Response, WorkerRequestContext>)?
