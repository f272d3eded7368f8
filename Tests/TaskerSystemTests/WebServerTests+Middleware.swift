import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SwiftProtobuf
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// `WebServerTests`, continued: request ids, CORS, routing and the request timeout.
extension WebServerTests {
    @Test
    func requestIDsCORSAndRoutingAsUpstream() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db)
            // As upstream's axum router (seen live, bindings/python/tests/test_contract.py): no route
            // → 404 without a body; a trailing slash is no route; a wrong method → 405 with Allow.
            let unknown = try await worker.get("/no/such/path")
            #expect(unknown.status == .notFound && unknown.text.isEmpty && unknown.headers[.contentType] == nil)
            let generated = try #require(unknown.headers[RequestIDMiddleware.header])
            #expect(UUID(uuidString: generated) != nil, "generated request id \(generated)")
            #expect(try await worker.get("/health/").status == .notFound)
            let wrong = try await worker.post("/health")
            #expect(wrong.status == .methodNotAllowed && wrong.headers[.allow] == "GET,HEAD" && wrong.text.isEmpty)
            let getValidate = try await worker.get("/v1/templates/webtest/greet/1.0.0/validate")
            #expect(getValidate.status == .methodNotAllowed && getValidate.headers[.allow] == "POST")
            let head = try await worker.execute(TestClient.Request("/health", method: .head))
            #expect(head.status == .ok && head.text.isEmpty)
            #expect(try await worker.get("/v1/templates?namespace=a&namespace=b").status == .badRequest)

            let echoed = try await worker.get("/health", headers: [RequestIDMiddleware.header: "trace-abc-123"])
            #expect(echoed.headers[RequestIDMiddleware.header] == "trace-abc-123")
            let other = try await worker.get("/health")
            #expect(other.headers[RequestIDMiddleware.header] != generated)
            // An unusable id (spaces) is replaced.
            let replaced = try await worker.get("/health", headers: [RequestIDMiddleware.header: "has spaces"])
            #expect(replaced.headers[RequestIDMiddleware.header].flatMap(UUID.init(uuidString:)) != nil)

            // CORS as upstream's tower_http layer: on every answer, with or without an Origin.
            let vary = "origin, access-control-request-method, access-control-request-headers"
            for response in [other, unknown, wrong] {
                #expect(response.headers[.accessControlAllowOrigin] == "*" && response.headers[.vary] == vary)
            }
            let cors = try await worker.get("/health", headers: [.origin: "https://dashboard.example"])
            #expect(cors.headers[.accessControlAllowOrigin] == "*")
            let preflight = try await worker.execute(
                TestClient.Request(
                    "/v1/templates", method: .options,
                    headers: [.origin: "https://dashboard.example", .accessControlRequestMethod: "GET"]))
            #expect(preflight.status == .ok && preflight.headers[.allow] == "GET,HEAD")
            #expect(preflight.headers[.accessControlAllowOrigin] == "*" && preflight.headers[.vary] == vary)
            #expect(preflight.headers[.accessControlAllowMethods] == "*")
            #expect(preflight.headers[.accessControlAllowHeaders] == "*")
            #expect(preflight.headers[RequestIDMiddleware.header] != nil)
            try await worker.stop()
        }
    }

    @Test
    func aRouteSlowerThanTheRequestTimeoutGets408() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db)
            var runtime = worker.daemon.runtime
            var configuration = runtime.configuration
            configuration.worker.web.requestTimeoutMs = 150
            runtime = WorkerRuntime(
                configuration: configuration, identity: runtime.identity, pool: runtime.pool, queuePool: runtime.queuePool,
                templates: runtime.templates,
                handlers: runtime.handlers, statistics: runtime.statistics, executor: runtime.executor, actors: runtime.actors,
                eventSystem: runtime.eventSystem, broker: runtime.broker, dispatch: runtime.dispatch,
                startedAt: runtime.startedAt, boundAddresses: BoundAddresses())
            // The server's own middleware chain, plus a route that sleeps (router middleware applies
            // to every route added after it).
            let router = WorkerWebServer.makeRouter(runtime: runtime)
            router.get("/test/slow") { _, _ -> String in
                try await Task.sleep(for: .seconds(30))
                return "too late"
            }
            let app = Application(router: router)
            try await app.test(.live) { client in
                let started = ContinuousClock.now
                try await client.execute(uri: "/test/slow", method: .get) { response in
                    #expect(response.status == .requestTimeout)
                    let body = try JSONDecoder().decode(JSONValue.self, from: Data(String(buffer: response.body).utf8))
                    #expect(body["error"]?["code"] == "TIMEOUT")
                    #expect(body["error"]?["message"] == "Request timed out after 150 ms")
                    #expect(response.headers[RequestIDMiddleware.header] != nil)
                }
                // Well before the route would have answered (generous: machines under load are slow).
                #expect(ContinuousClock.now - started < .seconds(15))
                // A route within the timeout is untouched.
                try await client.execute(uri: "/health", method: .get) { response in
                    #expect(response.status == .ok)
                }
            }
            try await worker.stop()
        }
    }
}
