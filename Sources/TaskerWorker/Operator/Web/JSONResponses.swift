import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TaskerAuth
import TaskerHTTP

/// Builds the server's JSON responses (bodies encoded with `APIJSON`).
enum JSONResponses {
    static let contentType = "application/json"

    /// `value` as a JSON response with `status`.
    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        do {
            return raw(try APIJSON.encode(value), status: status)
        } catch {
            return apiError(.internalError, message: "Internal server error")
        }
    }

    /// Already-encoded JSON.
    static func raw(_ data: Data, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: contentType], body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// `{"error":{"code","message"}}` with the code's status; keys sorted, so the bytes are upstream's
    /// (serde writes `code` before `message`) on every run.
    static func apiError(_ code: APIErrorCode, message: String) -> Response {
        APIErrorResponse.make(code, message: message)
    }

    /// An upstream `ErrorResponse` (`{"error","message","timestamp","request_id"}`) with `status`.
    static func errorResponse(
        _ kind: ErrorResponse.Kind, message: String, status: HTTPResponse.Status,
        context: WorkerRequestContext
    ) -> Response {
        make(ErrorResponse(kind, message: message, requestID: context.requestID), status: status)
    }

    /// Any thrown error as a JSON `ApiError` response; never throws.
    static func from(_ error: any Error, request: Request) -> Response {
        switch error {
        case let error as WebRequestError:
            return apiError(error.code, message: error.message)
        case let error as HTTPError:
            let code = APIErrorCode.forStatus(error.status.code)
            let message =
                error.body
                ?? (code == .notFound
                    ? "No route for \(request.method.rawValue) \(request.uri.path)" : error.status.reasonPhrase)
            return apiError(code, message: message)
        case let error as any HTTPResponseError:
            let code = APIErrorCode.forStatus(error.status.code)
            return apiError(code, message: error.status.reasonPhrase)
        default:
            return apiError(.internalError, message: "Internal server error")
        }
    }
}

/// An error a route throws to answer with an `ApiError` body (e.g. a bad query parameter).
struct WebRequestError: Error, Sendable {
    let code: APIErrorCode
    let message: String
}
