import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import HTTPTypes
import HummingbirdTesting
import Logging
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Issue #11 items 10 and 11 on the running worker: JWT `nbf`, the maximum token lifetime, the bearer
/// scheme in any case (REST and gRPC), gRPC `GetConfig` gated like `/config`; and one-line text logs.
@Suite("Operator surface hardening", .timeLimit(.minutes(2)))
struct SurfaceHardeningTests {
    static func token(_ changes: [String: JSONValue?] = [:]) async throws -> String {
        try await sign(claims(permissions: ["worker:templates_read", "worker:config_read"], changes))
    }

    @Test func jwtTimeClaimsAndSchemeCaseOnTheRunningWorker() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db) { configuration in
                configuration.worker.web.auth = authConfig { $0.jwtMaxTokenLifetimeSeconds = 3600 }
                configuration.worker.web.configEndpointEnabled = false
            }
            let now = Int64(Date().timeIntervalSince1970)
            let cases: [(String, String, Int)] = [
                ("valid", "Bearer \(try await Self.token())", 200),
                ("lower-case scheme", "bearer \(try await Self.token())", 200),
                ("upper-case scheme", "BEARER \(try await Self.token())", 200),
                ("nbf within the leeway", "Bearer \(try await Self.token(["nbf": .int(now + 30)]))", 200),
                ("nbf in the future", "Bearer \(try await Self.token(["nbf": .int(now + 600)]))", 401),
                ("nbf not a number", "Bearer \(try await Self.token(["nbf": .string("soon")]))", 401),
                ("lifetime at the maximum", "Bearer \(try await Self.token(["iat": .int(now), "exp": .int(now + 3600)]))", 200),
                ("lifetime over the maximum", "Bearer \(try await Self.token(["iat": .int(now), "exp": .int(now + 7200)]))", 401),
                ("no iat, exp too far", "Bearer \(try await Self.token(["iat": nil, "exp": .int(now + 7200)]))", 401),
                ("no iat, exp near", "Bearer \(try await Self.token(["iat": nil, "exp": .int(now + 600)]))", 200),
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
                let valid = try await Self.token()
                let future = try await Self.token(["nbf": .int(now + 600)])
                let long = try await Self.token(["exp": .int(now + 7200)])
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

    @Test func defaultMaximumLifetimeRejectsTokensLongerThan168Hours() async throws {
        #expect(WorkerConfiguration.Auth().jwtMaxTokenLifetimeSeconds == 604_800)
        let authenticator = try await WorkerAuthenticator(configuration: authConfig())
        let now = Int64(Date().timeIntervalSince1970)
        let week = try await Self.token(["iat": .int(now), "exp": .int(now + 604_800)])
        let longer = try await Self.token(["iat": .int(now), "exp": .int(now + 604_801 + 3600)])
        let off = try await WorkerAuthenticator(configuration: authConfig { $0.jwtMaxTokenLifetimeSeconds = 0 })
        #expect(
            try await authenticator.authenticate(AuthCredentials(authorization: "Bearer \(week)", apiKey: nil)).get()
                .subject == "svc-test")
        await #expect(throws: AuthFailure.self) {
            try await authenticator.authenticate(AuthCredentials(authorization: "Bearer \(longer)", apiKey: nil)).get()
        }
        #expect(
            try await off.authenticate(AuthCredentials(authorization: "Bearer \(longer)", apiKey: nil)).get()
                .subject == "svc-test")
        // An `iat` in the future does not stretch the limit: the lifetime counts from now.
        for futureIssued in [
            try await Self.token(["iat": .int(now + 30 * 86_400 - 600), "exp": .int(now + 30 * 86_400)]),
            try await Self.token(["iat": .int(now + 1_000_000_000), "exp": .int(now + 1_000_000_060)]),
        ] {
            await #expect(throws: AuthFailure.self) {
                try await authenticator.authenticate(AuthCredentials(authorization: "Bearer \(futureIssued)", apiKey: nil)).get()
            }
        }
    }

    @Test func bearerSchemeParsing() {
        #expect(WorkerAuthenticator.bearerToken("Bearer abc") == "abc")
        #expect(WorkerAuthenticator.bearerToken("bearer abc") == "abc")
        #expect(WorkerAuthenticator.bearerToken("BEARER  abc") == "abc")
        #expect(WorkerAuthenticator.bearerToken("Bearerabc") == nil)
        #expect(WorkerAuthenticator.bearerToken("Basic abc") == nil)
        #expect(WorkerAuthenticator.bearerToken("Bearer ") == nil)
    }

    @Test func textLogLinesCannotBeForgedWithNewlines() {
        let capture = LogCapture()
        let logger = Logger(label: "tasker.test") { WorkerLogHandler(label: $0, output: capture.output, format: .text, level: .info) }
        logger.info(
            "step failed\n2026-01-01T00:00:00.000Z error tasker.fake: forged",
            metadata: [
                "reason": "a\nb", "spaced": "x\r\ny z", "bell": "\u{07}", "nested": ["k\nk": "v\u{2028}w"], "ok": "plain",
            ])
        let lines = capture.all
        #expect(lines.count == 1)
        let line = lines.joined()
        #expect(line.hasSuffix("\n") && line.dropLast().firstIndex(where: { $0.isNewline }) == nil, "\(line)")
        #expect(line.contains(#"tasker.test: step failed\n2026-01-01T00:00:00.000Z error tasker.fake: forged "#), "\(line)")
        #expect(line.contains(#"reason="a\nb""#), "\(line)")
        #expect(line.contains(#"spaced="x\r\ny z""#), "\(line)")
        #expect(line.contains(#"bell="\u0007""#), "\(line)")
        #expect(line.contains(#"nested={k\nk="v\u2028w"}"#), "\(line)")
        #expect(line.contains(" ok=plain"), "\(line)")
    }
}
