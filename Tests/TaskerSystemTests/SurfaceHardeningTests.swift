import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import HTTPTypes
import HummingbirdTesting
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Issue #11 items 10 and 11 on the running worker: JWT `nbf`, the maximum token lifetime, the bearer
/// scheme in any case (REST and gRPC), gRPC `GetConfig` gated like `/config`. (The default lifetime,
/// the scheme's parsing and one-line text logs without a worker: `OperatorHardeningTests` in TaskerWorkerTests.)
@Suite("Operator surface hardening", .timeLimit(.minutes(2)))
struct SurfaceHardeningTests {
    @Test func jwtTimeClaimsAndSchemeCaseOnTheRunningWorker() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db) { configuration in
                configuration.worker.web.auth = authConfig { $0.jwtMaxTokenLifetimeSeconds = 3600 }
                configuration.worker.web.configEndpointEnabled = false
            }
            let now = Int64(Date().timeIntervalSince1970)
            let cases: [(String, String, Int)] = [
                ("valid", "Bearer \(try await readerToken())", 200),
                ("lower-case scheme", "bearer \(try await readerToken())", 200),
                ("upper-case scheme", "BEARER \(try await readerToken())", 200),
                ("nbf within the leeway", "Bearer \(try await readerToken(["nbf": .int(now + 30)]))", 200),
                ("nbf in the future", "Bearer \(try await readerToken(["nbf": .int(now + 600)]))", 401),
                ("nbf not a number", "Bearer \(try await readerToken(["nbf": .string("soon")]))", 401),
                ("lifetime at the maximum", "Bearer \(try await readerToken(["iat": .int(now), "exp": .int(now + 3600)]))", 200),
                ("lifetime over the maximum", "Bearer \(try await readerToken(["iat": .int(now), "exp": .int(now + 7200)]))", 401),
                ("no iat, exp too far", "Bearer \(try await readerToken(["iat": nil, "exp": .int(now + 7200)]))", 401),
                ("no iat, exp near", "Bearer \(try await readerToken(["iat": nil, "exp": .int(now + 600)]))", 200),
                ("scheme without a token", "bearer ", 401),
            ]
            for (name, authorization, status) in cases {
                var headers = HTTPFields()
                headers[.authorization] = authorization
                let response = try await worker.get("/v1/templates", headers: headers)
                #expect(Int(response.status.code) == status, "\(name): \(response.status) \(response.text)")
            }
            // REST /config is not mounted while config_endpoint_enabled is false.
            var admin = HTTPFields()
            admin[HTTPField.Name("X-API-Key")!] = "admin-key-abcdefghijk"
            #expect(try await worker.get("/config", headers: admin).status == .notFound)

            let (host, port) = try GRPCServerTests.split(try #require(worker.daemon.boundAddresses.grpc))
            try await withGRPCClient(
                transport: .http2NIOPosix(
                    target: .ipv4(address: host, port: port),
                    transportSecurity: .plaintext)
            ) { client in
                let templates = Tasker_V1_WorkerTemplateService.Client(wrapping: client)
                func code(_ authorization: String) async -> RPCError.Code? {
                    do {
                        _ = try await templates.listTemplates(.init(), metadata: ["authorization": .string(authorization)])
                        return nil
                    } catch let error as RPCError {
                        return error.code
                    } catch {
                        return .unknown
                    }
                }
                let valid = try await readerToken()
                let future = try await readerToken(["nbf": .int(now + 600)])
                let long = try await readerToken(["exp": .int(now + 7200)])
                #expect(await code("bearer \(valid)") == nil)
                #expect(await code("BeArEr \(valid)") == nil)
                #expect(await code("Bearer \(future)") == .unauthenticated)
                #expect(await code("Bearer \(long)") == .unauthenticated)

                // GetConfig honours config_endpoint_enabled like /config: NOT_FOUND, even for an admin.
                let config = Tasker_V1_WorkerConfigService.Client(wrapping: client)
                let error = await #expect(throws: RPCError.self) {
                    _ = try await config.getConfig(.init(), metadata: ["x-api-key": "admin-key-abcdefghijk"])
                }
                #expect(error?.code == .notFound)
                #expect(error?.message == WorkerConfigGRPCService.disabledMessage)
            }
            try await worker.stop()
        }
    }

    @Test func grpcGetConfigAnswersWhenTheEndpointIsEnabled() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db) { $0.worker.web.configEndpointEnabled = true }
            let (host, port) = try GRPCServerTests.split(try #require(worker.daemon.boundAddresses.grpc))
            try await withGRPCClient(
                transport: .http2NIOPosix(
                    target: .ipv4(address: host, port: port),
                    transportSecurity: .plaintext)
            ) { client in
                let config = Tasker_V1_WorkerConfigService.Client(wrapping: client)
                let answer = try await config.getConfig(.init())
                #expect(answer.workerType == "general")
            }
            try await worker.stop()
        }
    }
}
