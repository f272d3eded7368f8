import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import TaskerAuth
import TaskerHTTP
import TaskerHandlerSDK
import TaskerModel

/// The worker's REST server (`worker.web`): a Hummingbird application run as a `Service` of the
/// worker's `ServiceGroup`. Once it listens it publishes the address it really bound in
/// `runtime.boundAddresses.web` (port 0 picks a free port).
///
/// Middleware, outermost first: request id (`x-request-id` echoed or generated, on every response),
/// CORS as upstream's (`UpstreamCORSMiddleware`: any origin, method and header; `vary` on every answer),
/// JSON errors (thrown errors → `{"error":{"code","message"}}`), routing as upstream's axum router
/// (`UpstreamRoutingMiddleware`: 405 with `Allow` for a wrong method, `HEAD`, empty 404 for no route),
/// request timeout (`worker.web.request_timeout_ms` → 408). Routes: see `WorkerWebRoutes`; the
/// metrics routes come from `Metrics/WorkerMetricsRoutes`.
///
/// Connection limits: at most `max_connections` open connections (`ConnectionCap`; more wait in the
/// listen backlog), a request head must arrive within `header_read_timeout_seconds`, and a
/// connection without a request in progress is closed after `idle_timeout_seconds`.
struct WorkerWebServer: Service {
    package let runtime: WorkerRuntime
    /// Guards the permission-protected route groups (nil: no auth).
    let authorizer: WebAuthorizer?
    /// HTTPS with this material (`worker.web.tls_*`); nil: plaintext.
    let tls: ServerTLS?
    private let logger: Logger

    package init(
        runtime: WorkerRuntime, authorizer: WebAuthorizer? = nil, tls: ServerTLS?, logger: Logger = Logger(label: "tasker.web")
    ) {
        self.runtime = runtime
        self.authorizer = authorizer
        self.tls = tls
        self.logger = logger
    }

    /// The router with every middleware and route of the server (tests can drive it without sockets).
    package static func makeRouter(runtime: WorkerRuntime, authorizer: WebAuthorizer? = nil) -> Router<WorkerRequestContext> {
        let web = runtime.configuration.worker.web
        let router = Router(context: WorkerRequestContext.self)
        router.add(middleware: RequestIDMiddleware())
        let routes = RouteTable.worker(configEndpoint: web.configEndpointEnabled)
        router.add(middleware: UpstreamCORSMiddleware(routes: routes))
        router.add(middleware: JSONErrorMiddleware())
        router.add(middleware: UpstreamRoutingMiddleware(routes: routes))
        router.add(middleware: CrossSiteRequestMiddleware())
        router.add(middleware: RequestTimeoutMiddleware(timeout: .milliseconds(max(1, web.requestTimeoutMs))))
        WorkerWebRoutes.register(on: router, runtime: runtime, authorizer: authorizer)
        router.addWorkerMetricsRoutes(runtime: runtime)
        WorkerWebRoutes.registerDocs(on: router, runtime: runtime, metrics: true)
        return router
    }

    /// Serves until graceful shutdown; throws when the bind address is invalid (`RESTServerError`)
    /// or cannot be bound.
    package func run() async throws {
        let web = runtime.configuration.worker.web
        let addresses = runtime.boundAddresses
        let application = try RESTServerSetup(web, section: "worker.web", serverName: "rest", tls: tls).application(
            responder: HeadAsGetResponder(
                inner: Self.makeRouter(runtime: runtime, authorizer: authorizer).buildResponder(),
                routes: RouteTable.worker(configEndpoint: web.configEndpointEnabled)),
            logger: logger, onListening: { addresses.setWeb($0) })
        try await application.run()
    }
}
