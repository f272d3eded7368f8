import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerPostgres

/// The orchestration's task API in process, without a database: the pool budget its reads are given,
/// and refusals answered before any read (`OrchestrationRoutes` under HummingbirdTesting's `.router`).
/// (The API on a test database and its server under hostile clients: `OrchestrationTaskAPITests` and
/// `OrchestrationTaskAPIRobustnessTests` in TaskerSystemTests.)
@Suite(.timeLimit(.minutes(3))) struct OrchestrationTaskAPIRoutesTests {
    /// Runs `body` with a client of the API's routes (`OrchestrationRoutes`, the console's included) whose
    /// pool has no database behind it: its URL names a closed loopback port, so a route that reached for
    /// the database would fail, and none of these requests may.
    static func withRoutes(
        auth: WorkerConfiguration.Auth = WorkerConfiguration.Auth(),
        _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        try await withRouter(auth: auth) { _, client in try await body(client) }
    }

    /// ``withRoutes(auth:_:)`` that also hands `body` the routes the router serves (`METHOD /path`).
    static func withRouter(
        auth: WorkerConfiguration.Auth, _ body: @escaping @Sendable ([String], any TestClientProtocol) async throws -> Void
    ) async throws {
        let url = "postgresql://tasker@127.0.0.1:1/no_database?connect_timeout=1"
        let pool = PostgresConnectionPool(configuration: PostgresPoolConfiguration(url: url, maxConnections: 1, minConnections: 0))
        let service = OrchestrationService(pool: pool, databaseURL: url)
        let authenticator = try await OrchestrationWebServer.authenticator(auth, logger: Logger(label: "test.auth"))
        let router = OrchestrationRoutes.makeRouter(
            queries: TaskQueries(pool: pool, orchestration: service), authenticator: authenticator, requestTimeout: .seconds(30))
        let routes = router.routes.map { "\($0.method.rawValue) \($0.path)" }
        do {
            try await Application(router: router).test(.router) { client in try await body(routes, client) }
        } catch {
            await pool.close()
            throw error
        }
        await pool.close()
    }

    /// `orchestration.web.database_pools.operator_max_connections` bounds the connections the task API
    /// reads through (the `.operator` lane of the orchestration's pool), as its comment says.
    @Test func theOperatorBudgetOfThePoolIsConfigured() async throws {
        var configuration = TaskerConfiguration()
        configuration.orchestration.web.databasePools.operatorMaxConnections = 3
        let service = OrchestrationService(configuration: configuration)
        #expect(service.databasePool.configuration.operatorMaxConnections == 3)
        await service.databasePool.close()
    }

    /// Refusals are built by the one `{"error":{"code","message"}}` builder (`APIErrorResponse`): keys
    /// in upstream's order on every run, whatever the hash seed; an oversized body is 413.
    @Test func errorBodiesAreTheSharedBuildersBytes() async throws {
        try await Self.withRoutes { client in
            let body = try await client.execute(uri: "/v1/tasks/not-a-uuid", method: .get) { String(buffer: $0.body) }
            #expect(body == #"{"error":{"code":"INVALID_UUID","message":"task uuid is not a uuid: \"not-a-uuid\""}}"#)
            let oversized = ByteBuffer(string: String(repeating: " ", count: OrchestrationWebServer.maxBodyBytes + 1))
            let (status, text) = try await client.execute(
                uri: "/v1/tasks", method: .post, headers: [.contentType: "application/json"], body: oversized
            ) {
                ($0.status, String(buffer: $0.body))
            }
            #expect(status.code == 413)
            #expect(
                text
                    == #"{"error":{"code":"PAYLOAD_TOO_LARGE","message":"Request body larger than \#(OrchestrationWebServer.maxBodyBytes) bytes"}}"#
            )
        }
    }
}
