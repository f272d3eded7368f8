import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import TaskerAuth
import TaskerHTTP
import TaskerModel

/// The orchestration's REST server (`[orchestration.web]`, upstream's orchestration web API, task part):
/// a Hummingbird application run as a `Service` next to `OrchestrationService`. Port 0 picks a free
/// port; the address really bound is logged ("REST server listening") and published in
/// ``boundAddress``. Auth: `[orchestration.web.auth]`, the worker's keys and rules (`TaskerAuth`).
/// Connection limits as the worker's REST server (`HTTPConnectionLimits`): `max_connections`,
/// `max_connections_per_address`, `header_read_timeout_seconds`, `idle_timeout_seconds`.
public struct OrchestrationWebServer: Service {
    private let web: OrchestrationConfiguration.Web
    private let queries: TaskQueries
    private let logger: Logger
    private let bound = BoundAddressBox()

    /// A server answering from `queries` with the settings of `web`.
    public init(web: OrchestrationConfiguration.Web, queries: TaskQueries, logger: Logger = Logger(label: "tasker.orchestration.web")) {
        self.web = web
        self.queries = queries
        self.logger = logger
    }

    /// `host:port` once listening.
    var boundAddress: String? { bound.value }

    /// The largest request body accepted (`POST /v1/tasks`); larger bodies get 413.
    static let maxBodyBytes = 4 << 20

    /// Builds the authenticator from `[orchestration.web.auth]`, naming the orchestration's keys in errors.
    static func authenticator(_ auth: WorkerConfiguration.Auth, logger: Logger) async throws -> WorkerAuthenticator {
        do {
            return try await WorkerAuthenticator(configuration: auth, logger: logger)
        } catch {
            var renamed = error
            renamed.keyPath = renamed.keyPath.replacingOccurrences(of: "worker.web.auth", with: "orchestration.web.auth")
            throw renamed
        }
    }

    /// Serves until graceful shutdown; throws when the bind address (`RESTServerError`), the TLS files
    /// (`ServerTLSError`) or the auth settings are invalid, or the address cannot be bound.
    public func run() async throws {
        let setup = RESTServerSetup(
            web, section: "orchestration.web", serverName: "orchestration-rest",
            tls: try ServerTLS.load(web, section: "orchestration.web"))
        let authenticator = try await Self.authenticator(web.auth, logger: Logger(label: "tasker.orchestration.auth"))
        for warning in authenticator.warnings {
            logger.warning(
                "auth configuration",
                metadata: ["warning": "\(warning.replacingOccurrences(of: "worker.web.auth", with: "orchestration.web.auth"))"])
        }
        let router = OrchestrationRoutes.makeRouter(
            queries: queries, authenticator: authenticator, requestTimeout: .milliseconds(max(1, web.requestTimeoutMs)))
        let bound = self.bound
        do {
            let application = try setup.application(
                responder: router.buildResponder(), logger: logger, listeningMetadata: ["auth": "\(authenticator)"],
                onListening: { bound.set($0) })
            try await application.run()
        } catch {
            await queries.close()
            throw error
        }
        await queries.close()
    }
}

/// The address the server bound, set once from the server's event loop and read by anyone.
final class BoundAddressBox: Sendable {
    private let storage = Mutex<String?>(nil)
    var value: String? { storage.withLock { $0 } }
    func set(_ value: String) { storage.withLock { $0 = value } }
}
