import Hummingbird

/// Turns every error thrown below it (unknown paths, bad parameters, unexpected failures) into a
/// JSON `{"error":{"code","message"}}` response; the server never answers with an empty 500.
struct JSONErrorMiddleware: RouterMiddleware {
    typealias Context = WorkerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            context.logger.debug("request failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            return JSONResponses.from(error, request: request)
        }
    }
}
