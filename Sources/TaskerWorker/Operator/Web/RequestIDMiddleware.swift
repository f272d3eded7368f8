import Foundation
import HTTPTypes
import Hummingbird

/// Gives every response an `x-request-id`: the request's own when it sent a usable one (1–128
/// visible ASCII characters), else a new UUID. The id is stored in the context for error bodies.
/// As the outermost middleware it also turns any error that got this far into a JSON response.
struct RequestIDMiddleware: RouterMiddleware {
    typealias Context = WorkerRequestContext
    static let header = HTTPField.Name("x-request-id")!

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let id = Self.usable(request.headers[Self.header]) ?? UUID().uuidString.lowercased()
        var context = context
        context.requestID = id
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            response = JSONResponses.from(error, request: request)
        }
        response.headers[Self.header] = id
        return response
    }

    static func usable(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value.utf8.count <= 128,
            value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f })
        else { return nil }
        return value
    }
}
