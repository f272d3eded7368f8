import Hummingbird
import Logging

/// Turns every error thrown below it (unknown paths, bad parameters, unexpected failures) into a
/// JSON `{"error":{"code","message"}}` response; the server never answers with an empty 500.
/// An unexpected error is answered with the generic "Internal server error" (never its own text, which
/// may be the database's message or SQL) and logged at error level under the request id (`x-request-id`).
struct JSONErrorMiddleware: RouterMiddleware {
    typealias Context = WorkerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let metadata: Logger.Metadata = [
                "error": "\(OperatorErrorText.logDetail(error))", "path": "\(request.uri.path)",
                "request_id": "\(context.requestID ?? "none")",
            ]
            if error is WebRequestError || error is any HTTPResponseError {
                context.logger.debug("request failed", metadata: metadata)
            } else {
                context.logger.error("request failed", metadata: metadata)
            }
            return JSONResponses.from(error, request: request)
        }
    }
}
