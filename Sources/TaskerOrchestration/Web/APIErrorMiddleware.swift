import Foundation
import HTTPTypes
import Hummingbird
import TaskerHTTP

/// Answers thrown errors in upstream's `ApiError` shape (`APIErrorResponse`, the worker's builder).
struct APIErrorMiddleware<Context: RequestContext>: RouterMiddleware {

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as TaskAPIError {
            var response = APIErrorResponse.make(error.code, message: error.message)
            if let seconds = error.retryAfterSeconds { response.headers[.retryAfter] = String(seconds) }
            return response
        } catch let error as any HTTPResponseError {
            // `HTTPError`s of the routes, and Hummingbird's own (`collectBody(upTo:)` throws
            // `NIOTooManyBytesError`, a 413).
            switch APIErrorCode.forStatus(error.status.code) {
            case .notFound:
                return APIErrorResponse.make(.notFound, message: "No route for \(request.method.rawValue) \(request.uri.path)")
            case .payloadTooLarge:
                return APIErrorResponse.make(
                    .payloadTooLarge, message: "Request body larger than \(OrchestrationWebServer.maxBodyBytes) bytes")
            case let code:
                return APIErrorResponse.make(
                    code, message: (error as? HTTPError)?.body ?? error.status.reasonPhrase, status: error.status)
            }
        } catch {
            return APIErrorResponse.make(.internalError, message: "Internal server error")
        }
    }
}
