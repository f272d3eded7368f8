import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import TaskerAuth
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
package struct WorkerWebServer: Service {
    package let runtime: WorkerRuntime
    /// Guards the permission-protected route groups (nil: no auth).
    package let authorizer: WebAuthorizer?
    private let logger: Logger

    package init(runtime: WorkerRuntime, authorizer: WebAuthorizer? = nil, logger: Logger = Logger(label: "tasker.web")) {
        self.runtime = runtime
        self.authorizer = authorizer
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

    /// Serves until graceful shutdown; throws when the bind address is invalid or cannot be bound.
    package func run() async throws {
        let bind = runtime.configuration.worker.web.bindAddress
        let address: TaskerModel.BindAddress
        do {
            address = try TaskerModel.BindAddress(parsing: bind)
        } catch {
            throw WebServerError(message: "worker.web.bind_address must be host:port, got \"\(bind)\"")
        }
        let addresses = runtime.boundAddresses
        let logger = self.logger
        let web = runtime.configuration.worker.web
        let application = Application(
            responder: HeadAsGetResponder(
                inner: Self.makeRouter(runtime: runtime, authorizer: authorizer).buildResponder(),
                routes: RouteTable.worker(configEndpoint: web.configEndpointEnabled)),
            server: Self.limits(web).http1(server: "rest", logger: logger),
            configuration: ApplicationConfiguration(
                address: .hostname(address.host, port: address.port), serverName: nil,
                availableConnectionsDelegate: Self.limits(web).connectionCap(server: "rest", logger: logger)),
            onServerRunning: { channel in
                let address = Self.describe(channel.localAddress) ?? bind
                addresses.setWeb(address)
                logger.info("REST server listening", metadata: ["address": "\(address)"])
            },
            logger: logger)
        try await application.run()
    }

    /// The connection limits of `worker.web` (`HTTPConnectionLimits`, shared with the orchestration's server).
    static func limits(_ web: WorkerConfiguration.Web) -> HTTPConnectionLimits {
        HTTPConnectionLimits(
            maxConnections: web.maxConnections, maxConnectionsPerAddress: web.maxConnectionsPerAddress,
            headerReadTimeoutSeconds: web.headerReadTimeoutSeconds, idleTimeoutSeconds: web.idleTimeoutSeconds)
    }

    /// `host:port` of a bound socket address.
    static func describe(_ address: SocketAddress?) -> String? {
        guard let address, let ip = address.ipAddress, let port = address.port else { return nil }
        if case .v6 = address { return "[\(ip)]:\(port)" }
        return "\(ip):\(port)"
    }
}

/// The REST server could not start.
package struct WebServerError: Error, CustomStringConvertible, Sendable {
    package let message: String
    package var description: String { message }
}
