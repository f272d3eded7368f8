import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SwiftProtobuf
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The auth matrix through the real daemon: REST over its socket and gRPC through a grpc-swift
/// client, with API keys and JWTs (fixtures from AuthTests). Health, metrics, `grpc.health.v1`
/// stay open.
@Suite("Auth on the running worker", .timeLimit(.minutes(2)))
struct AuthIntegrationTests {
    static func startWorker(_ db: TestDatabase) async throws -> WebTestWorker {
        try await WebTestWorker.start(db) { configuration in
            configuration.worker.web.auth = authConfig()
            configuration.worker.web.configEndpointEnabled = true
        }
    }

    static func fields(bearer: String? = nil, apiKey: String? = nil) -> HTTPFields {
        var fields = HTTPFields()
        if let bearer { fields[.authorization] = "Bearer \(bearer)" }
        if let apiKey, let name = HTTPField.Name("X-API-Key") { fields[name] = apiKey }
        return fields
    }

    @Test func restAuthMatrixOverTheSocket() async throws {
        try await withTestDatabase { db in
            let worker = try await Self.startWorker(db)
            let reader = "reader-key-0123456789"
            let admin = "admin-key-abcdefghijk"
            let templates = "/v1/templates"
            let config = "/config"
            let validate = "/v1/templates/webtest/greet/1.0.0/validate"
            let now = Int64(Date().timeIntervalSince1970)
            let cases: [(String, String, HTTPFields, Bool, Int, String?)] = [
                ("no credentials", templates, [:], false, 401, "missing"),
                ("wrong key", templates, Self.fields(apiKey: "not-a-key-at-all-xx"), false, 401, "invalid"),
                ("reader on config", config, Self.fields(apiKey: reader), false, 403, "forbidden"),
                ("reader on validate", validate, Self.fields(apiKey: reader), true, 403, "forbidden"),
                ("reader on templates", templates, Self.fields(apiKey: reader), false, 200, nil),
                ("admin on config", config, Self.fields(apiKey: admin), false, 200, nil),
                ("admin on validate", validate, Self.fields(apiKey: admin), true, 200, nil),
                (
                    "jwt with permission", config,
                    Self.fields(bearer: try await sign(claims(permissions: ["worker:config_read"]))), false, 200, nil
                ),
                (
                    "jwt without permission", config,
                    Self.fields(bearer: try await sign(claims(permissions: ["worker:templates_read"]))), false, 403, "forbidden"
                ),
                (
                    "expired jwt", templates,
                    Self.fields(
                        bearer: try await sign(
                            claims(
                                permissions: ["worker:templates_read"], ["exp": .int(now - 3600)]))), false, 401, "invalid"
                ),
                (
                    "wrong issuer", templates,
                    Self.fields(
                        bearer: try await sign(
                            claims(
                                permissions: ["worker:templates_read"], ["iss": .string("someone-else")]))), false, 401, "invalid"
                ),
                (
                    "wrong audience", templates,
                    Self.fields(
                        bearer: try await sign(
                            claims(
                                permissions: ["worker:templates_read"], ["aud": .string("orchestration-api")]))), false, 401, "invalid"
                ),
            ]
            for (name, path, headers, post, status, reason) in cases {
                let response = post ? try await worker.post(path, headers: headers) : try await worker.get(path, headers: headers)
                #expect(Int(response.status.code) == status, "\(name): \(response.status)")
                if let reason {
                    #expect(response.headers[HTTPField.Name("x-auth-failure-reason")!] == reason, "\(name)")
                    let body = try JSONDecoder().decode(JSONValue.self, from: Data(String(buffer: response.body ?? ByteBuffer()).utf8))
                    let code = status == 401 ? "AUTHENTICATION_FAILED" : "AUTHORIZATION_FAILED"
                    #expect(body["error"]?["code"] == .string(code), "\(name): \(body)")
                }
            }
            // Open routes need nothing.
            for path in ["/health", "/health/live", "/health/ready", "/health/detailed", "/metrics", "/api-docs/openapi.json"] {
                #expect(try await worker.get(path).status == .ok, "\(path)")
            }
            // The configured secrets never appear in /config.
            let body = String(buffer: try await worker.get(config, headers: Self.fields(apiKey: admin)).body ?? ByteBuffer())
            #expect(!body.contains(admin) && !body.contains(reader) && !body.contains("BEGIN PUBLIC KEY"))
            try await worker.stop()
        }
    }

    @Test func grpcAuthOnTheRunningServer() async throws {
        try await withTestDatabase { db in
            let worker = try await Self.startWorker(db)
            let address = try #require(worker.daemon.boundAddresses.grpc)
            let (host, port) = try GRPCServerTests.split(address)
            try await withGRPCClient(
                transport: .http2NIOPosix(
                    target: .ipv4(address: host, port: port),
                    transportSecurity: .plaintext)
            ) { client in
                let config = Tasker_V1_WorkerConfigService.Client(wrapping: client)
                let templates = Tasker_V1_WorkerTemplateService.Client(wrapping: client)
                func code(_ call: () async throws -> Void) async -> RPCError.Code? {
                    do {
                        try await call()
                        return nil
                    } catch let error as RPCError {
                        return error.code
                    } catch {
                        return .unknown
                    }
                }
                #expect(await code { _ = try await config.getConfig(.init()) } == .unauthenticated)
                #expect(
                    await code { _ = try await config.getConfig(.init(), metadata: ["x-api-key": "wrong-key-0123456789"]) }
                        == .unauthenticated)
                #expect(
                    await code { _ = try await config.getConfig(.init(), metadata: ["x-api-key": "reader-key-0123456789"]) }
                        == .permissionDenied)
                #expect(
                    await code { _ = try await config.getConfig(.init(), metadata: ["x-api-key": "admin-key-abcdefghijk"]) }
                        == nil)
                let token = try await sign(claims(permissions: ["worker:templates_read"]))
                #expect(
                    await code { _ = try await templates.listTemplates(.init(), metadata: ["authorization": "Bearer \(token)"]) }
                        == nil)
                let expired = try await sign(
                    claims(
                        permissions: ["worker:templates_read"],
                        ["exp": .int(Int64(Date().timeIntervalSince1970) - 3600)]))
                #expect(
                    await code { _ = try await templates.listTemplates(.init(), metadata: ["authorization": "Bearer \(expired)"]) }
                        == .unauthenticated)
                // Health stays open.
                let health = Tasker_V1_WorkerHealthService.Client(wrapping: client)
                #expect(await code { _ = try await health.checkHealth(.init()) } == nil)
                let standard = Grpc_Health_V1_Health.Client(wrapping: client)
                let serving = try await standard.check(.with { $0.service = "" })
                #expect(serving.status == .serving)
            }
            try await worker.stop()
        }
    }
}
