import HTTPTypes
import Hummingbird
import TaskerHTTP

/// The REST server's routes as (method, path pattern) pairs, for answering as upstream's axum router
/// does what no route serves: a known path with another method, `HEAD`, a trailing slash.
/// `{}` segments match any one segment. Kept next to `WorkerWebRoutes`/`WorkerMetricsRoutes`; the
/// live contract test (bindings/python/tests/test_contract.py) sends every route both ways.
struct RouteTable: Sendable {
    private var entries: [(method: HTTPRequest.Method, segments: [Substring])] = []

    /// The worker's routes (`/config` only when `configEndpoint`).
    package static func worker(configEndpoint: Bool) -> RouteTable {
        var table = RouteTable()
        let reads = [
            "/health", "/health/ready", "/health/live", "/health/detailed", "/metrics", "/metrics/worker",
            "/metrics/events", "/v1/templates", "/v1/templates/{}/{}/{}", "/api-docs/openapi.json",
        ]
        for path in reads + (configEndpoint ? ["/config"] : []) { table.add(.get, path) }
        table.add(.post, "/v1/templates/{}/{}/{}/validate")
        // Swagger UI (`SwaggerUIRoutes`): upstream's `/api-docs/ui/{*tail}` answers every name with GET
        // and HEAD (405 for other methods, an empty 404 for unknown names).
        table.add(.get, SwaggerUIRoutes.path)
        table.add(.get, SwaggerUIRoutes.path + "/{}")
        return table
    }

    mutating func add(_ method: HTTPRequest.Method, _ pattern: String) {
        entries.append((method, pattern.split(separator: "/")))
    }

    /// The methods served at `path`, in upstream's `Allow` order (`GET`, `HEAD` for a GET route);
    /// empty when no route has this path.
    package func methods(at path: String) -> [HTTPRequest.Method] {
        // Swagger UI's folder is the one route with a trailing slash: its index.
        let path = path == SwaggerUIRoutes.path + "/" ? SwaggerUIRoutes.path + "/index.html" : path
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        var methods: [HTTPRequest.Method] = []
        for entry in entries where entry.segments.count == segments.count {
            let matches = zip(entry.segments, segments).allSatisfy { pattern, segment in
                pattern == "{}" ? !segment.isEmpty : pattern == segment
            }
            if matches && !methods.contains(entry.method) { methods.append(entry.method) }
        }
        if let get = methods.firstIndex(of: .get) { methods.insert(.head, at: get + 1) }
        return methods
    }
}

/// Answers as upstream's router does where no route serves a request: a known path with another
/// method → 405 with `Allow` and no body; an unknown path (a trailing slash included) → 404 with no
/// body (`HEAD` on a GET route: `HeadAsGetResponder`, around the router). Swagger UI's folder
/// `/api-docs/ui/` is the one path served with a trailing slash.
struct UpstreamRoutingMiddleware: RouterMiddleware {
    typealias Context = WorkerRequestContext
    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        let folder = path == SwaggerUIRoutes.path + "/"
        if path.count > 1 && path.hasSuffix("/") && !folder { return Response(status: .notFound) }
        let methods = routes.methods(at: path)
        if !methods.isEmpty && !methods.contains(request.method) {
            let allow = methods.map(\.rawValue).joined(separator: ",")
            return Response(status: .methodNotAllowed, headers: [.allow: allow])
        }
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            return Response(status: .notFound)
        }
    }
}

/// `HEAD` on a GET route answered as upstream's axum router does: the GET answer without its body.
/// Wraps the whole router (a middleware runs only after the router picked a route, and no route
/// serves `HEAD`).
struct HeadAsGetResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context == WorkerRequestContext {
    typealias Context = WorkerRequestContext
    let inner: Inner
    let routes: RouteTable

    func respond(to request: Request, context: Context) async throws -> Response {
        guard request.method == .head, routes.methods(at: request.uri.path).contains(.get) else {
            return try await inner.respond(to: request, context: context)
        }
        var head = request.head
        head.method = .get
        let response = try await inner.respond(to: Request(head: head, body: request.body), context: context)
        return Response(status: response.status, headers: response.headers, body: ResponseBody())
    }
}

/// CORS as upstream's `tower_http` layer with any origin, method and header: every answer carries
/// `access-control-allow-origin: *` and `vary: origin, access-control-request-method,
/// access-control-request-headers`; an `OPTIONS` request is answered here (200, no body) with
/// `access-control-allow-methods: *`, `access-control-allow-headers: *` and the path's `Allow`.
struct UpstreamCORSMiddleware: RouterMiddleware {
    typealias Context = WorkerRequestContext
    let routes: RouteTable
    static let vary = "origin, access-control-request-method, access-control-request-headers"

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        if request.method == .options {
            response = Response(status: .ok)
            response.headers[.accessControlAllowMethods] = "*"
            response.headers[.accessControlAllowHeaders] = "*"
            let methods = routes.methods(at: request.uri.path)
            if !methods.isEmpty { response.headers[.allow] = methods.map(\.rawValue).joined(separator: ",") }
        } else {
            response = try await next(request, context)
        }
        response.headers[.accessControlAllowOrigin] = "*"
        response.headers[.vary] = Self.vary
        return response
    }
}
