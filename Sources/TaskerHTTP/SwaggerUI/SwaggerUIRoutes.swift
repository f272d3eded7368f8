import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Swagger UI at `/api-docs/ui/` for `/api-docs/openapi.json`, as upstream serves it on both of its
/// servers, the worker's and the orchestration's (utoipa-swagger-ui, Swagger UI 5.17.14):
/// `/api-docs/ui` answers 303 with `Location: /api-docs/ui/`, `/api-docs/ui/` is `index.html`,
/// `/api-docs/ui/<name>` one of ``SwaggerUIFiles`` (byte-identical to upstream's, with its content
/// types), anything else 404. GET and HEAD only; public like the document (upstream serves both
/// outside its auth layer). Ours adds `ETag` and `Cache-Control: no-cache`, and answers a matching
/// `If-None-Match` with 304. The one implementation of both servers: each registers it on its router.
package enum SwaggerUIRoutes {
    /// Where the UI lives.
    package static let path = "/api-docs/ui"
    /// A response body is written in chunks of this many bytes (a 1.4 MB file is never one allocation).
    static let chunkSize = 64 * 1024

    /// Adds the UI's routes (GET and HEAD of the folder and of each file) to `router`.
    package static func register<Context: RequestContext>(on router: Router<Context>) {
        // The router drops empty path components (`/api-docs/ui/`, `//api-docs/ui` land here too):
        // only the two exact spellings are served, as upstream does.
        let folder: @Sendable (Request, Context) async throws -> Response = { request, _ in
            switch request.uri.path {
            case path: return Response(status: .seeOther, headers: [.location: path + "/"])
            case path + "/": return try serve("index.html", request)
            default: throw HTTPError(.notFound)
            }
        }
        let file: @Sendable (Request, Context) async throws -> Response = { request, context in
            let raw = try context.parameters.require("file")
            guard request.uri.path == path + "/" + raw, let name = raw.removingPercentEncoding else {
                throw HTTPError(.notFound)
            }
            return try serve(name, request)
        }
        for (route, handler) in [(RouterPath(path), folder), (RouterPath(path + "/{file}"), file)] {
            router.get(route, use: handler)
            // HEAD as upstream answers it: GET's status and headers (Content-Length included), no body.
            router.head(route) { request, context in try await handler(request, context).createHeadResponse() }
        }
    }

    /// The embedded file `name` (404 for any other name), or 304 when the client has it already.
    static func serve(_ name: String, _ request: Request) throws -> Response {
        guard let file = SwaggerUIFiles.byName[name] else { throw HTTPError(.notFound) }
        var headers: HTTPFields = [.eTag: file.entityTag, .cacheControl: "no-cache"]
        if let match = request.headers[.ifNoneMatch], matches(match, file.entityTag) {
            var response = Response(status: .notModified, headers: headers)
            response.headers[.contentLength] = nil  // a 304 has no body; its length is not 0
            return response
        }
        headers[.contentType] = file.contentType
        let length = file.length
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody(contentLength: length) { writer in
                var offset = 0
                while offset < length {
                    try await writer.write(SwaggerUIFiles.bytes(of: file, offset: offset, count: chunkSize))
                    offset += chunkSize
                }
                try await writer.finish(nil)
            })
    }

    /// Whether an `If-None-Match` value (`*` or a list of tags, weak or strong) names `tag`.
    package static func matches(_ header: String, _ tag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            let trimmed = candidate.trimmingCharacters(in: .whitespaces)
            return trimmed == "*" || trimmed == tag || trimmed == "W/" + tag
        }
    }
}
