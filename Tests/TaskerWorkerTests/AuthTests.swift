import CryptoExtras
import Foundation
import GRPCCore
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

private func configurationError(_ auth: WorkerConfiguration.Auth) async -> AuthConfigurationError? {
    do {
        _ = try await WorkerAuthenticator(configuration: auth)
        return nil
    } catch {
        return error
    }
}

/// A router with one route per permission behind `RequirePermissionMiddleware`, plus an open `/health`.
private func makeApplication(_ authenticator: WorkerAuthenticator) -> some ApplicationProtocol {
    let router = Router()
    router.get("health") { _, _ in "healthy" }
    router.group("templates")
        .add(middleware: RequirePermissionMiddleware(authenticator: authenticator, permission: .templatesRead))
        .get { _, _ in "templates" }
    router.group("config")
        .add(middleware: RequirePermissionMiddleware(authenticator: authenticator, permission: .configRead))
        .get { _, _ in "config" }
    return Application(router: router)
}

private func headers(bearer: String? = nil, apiKey: String? = nil, header: String = "X-API-Key") -> HTTPFields {
    var fields = HTTPFields()
    if let bearer { fields[.authorization] = "Bearer \(bearer)" }
    if let apiKey { fields[HTTPField.Name(header)!] = apiKey }
    return fields
}

private func bodyJSON(_ response: TestResponse) throws -> [String: [String: String]] {
    try JSONDecoder().decode([String: [String: String]].self, from: Data(response.body.readableBytesView))
}

/// Status, reason header and body message of a GET through the middleware.
private func get(
    _ app: some ApplicationProtocol, _ path: String, _ fields: HTTPFields
) async throws
    -> (status: Int, reason: String?, message: String?)
{
    try await app.test(.router) { client in
        try await client.execute(uri: path, method: .get, headers: fields) { response in
            let reason = response.headers[AuthFailure.reasonField]
            let message = response.status.code >= 400 ? try bodyJSON(response)["error"]?["message"] : nil
            return (response.status.code, reason, message)
        }
    }
}

// MARK: - Permissions and configuration

@Suite("Auth")
struct AuthTests {
    @Test func permissionMatchingUsesExactNamesAndResourceWildcards() {
        #expect(WorkerPermission.templatesRead.rawValue == "worker:templates_read")
        #expect(WorkerPermission.configRead.rawValue == "worker:config_read")
        #expect(WorkerPermission.templatesValidate.rawValue == "templates:validate")
        let worker = AuthPrincipal(subject: "s", permissions: ["worker:*"], method: .jwt)
        #expect(worker.has(.templatesRead) && worker.has(.configRead) && !worker.has(.templatesValidate))
        #expect(!AuthPrincipal(subject: "s", permissions: ["*"], method: .jwt).has(.configRead))
        #expect(!AuthPrincipal(subject: "s", permissions: ["worker:config"], method: .jwt).has(.configRead))
        #expect(AuthPrincipal.anonymous.has(.templatesValidate))
        #expect(PermissionVocabulary.isKnown("tasks:create") && PermissionVocabulary.isKnown("dlq:*"))
        #expect(!PermissionVocabulary.isKnown("*") && !PermissionVocabulary.isKnown("custom:*"))
    }

    @Test func configurationErrorsNameTheKeyAndNeverTheSecret() async throws {
        let noMaterial = await configurationError(
            authConfig {
                $0.jwtPublicKey = ""
                $0.apiKeys = []
            })
        #expect(noMaterial?.keyPath == "worker.web.auth")
        let badPEM = await configurationError(
            authConfig { $0.jwtPublicKey = "-----BEGIN PUBLIC KEY-----\nc2VjcmV0LXZhbHVl\n-----END PUBLIC KEY-----" })
        #expect(badPEM?.keyPath == "worker.web.auth.jwt_public_key")
        #expect(badPEM.map { !"\($0)".contains("c2VjcmV0LXZhbHVl") } == true)
        let missingFile = await configurationError(authConfig { $0.jwtPublicKeyPath = "/nonexistent/key.pem" })
        #expect(missingFile?.keyPath == "worker.web.auth.jwt_public_key_path")
        #expect(
            await configurationError(authConfig { $0.jwtAllowedAlgorithms = ["HS256"] })?.keyPath
                == "worker.web.auth.jwt_allowed_algorithms")
        #expect(
            await configurationError(authConfig { $0.jwtVerificationMethod = "jwks" })?.keyPath
                == "worker.web.auth.jwt_verification_method")
        #expect(
            await configurationError(authConfig { $0.apiKeys[1].key = "" })?.keyPath
                == "worker.web.auth.api_keys[1].key")
        let unknown = await configurationError(authConfig { $0.apiKeys[0].permissions = ["worker:everything"] })
        #expect(unknown?.keyPath == "worker.web.auth.api_keys[0].permissions")
        #expect(
            await configurationError(
                authConfig {
                    $0.apiKeys[0].permissions = ["*"]
                    $0.strictValidation = false
                }) == nil)
        #expect(
            await configurationError(authConfig { $0.apiKeyHeader = "X API Key" })?.keyPath
                == "worker.web.auth.api_key_header")
        // Disabled auth never validates (upstream ships empty keys by default).
        #expect(await configurationError(WorkerConfiguration.Auth()) == nil)
    }

    @Test func descriptionsRedactSecrets() async throws {
        let auth = authConfig { $0.apiKey = "legacy-secret-key" }
        let texts = ["\(auth)", String(reflecting: auth), "\(auth.apiKeys[0])", "\(auth.apiKeys)"]
        var dumped = ""
        dump(auth, to: &dumped)
        for text in texts + [dumped] {
            #expect(!text.contains("reader-key-0123456789") && !text.contains("admin-key-abcdefghijk"))
            #expect(!text.contains("legacy-secret-key") && !text.contains("BEGIN PUBLIC KEY"))
        }
        #expect("\(auth)".contains("api_key: ***"))
        let authenticator = try await WorkerAuthenticator(configuration: auth)
        #expect(!"\(authenticator)".contains("reader-key") && "\(authenticator)".contains("reader"))
        let credentials = AuthCredentials(authorization: "Bearer abc.def.ghi", apiKey: "reader-key-0123456789")
        #expect(!"\(credentials)".contains("abc.def") && !"\(credentials)".contains("reader-key"))
        let principal = try await authenticator.authenticate(AuthCredentials(authorization: nil, apiKey: "reader-key-0123456789")).get()
        #expect(!"\(principal)".contains("reader-key"))
    }

    @Test func publicKeyFromFileAndSingleLinePEM() async throws {
        let pem = signingKey.publicKey.pemRepresentation
        let oneLine = pem.split(separator: "\n").joined()
        let fromEnv = try await WorkerAuthenticator(configuration: authConfig { $0.jwtPublicKey = oneLine })
        let token = try await sign(claims(permissions: ["worker:config_read"]))
        #expect(
            try await fromEnv.authorize(AuthCredentials(authorization: "Bearer \(token)", apiKey: nil), for: .configRead).get().subject
                == "svc-test")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("auth-\(UUID().uuidString).pem").path
        try pem.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        // The path wins over an inline key (here: the wrong one).
        let fromFile = try await WorkerAuthenticator(
            configuration: authConfig {
                $0.jwtPublicKeyPath = path
                $0.jwtPublicKey = otherSigningKey.publicKey.pemRepresentation
            })
        #expect(
            try await fromFile.authorize(AuthCredentials(authorization: "Bearer \(token)", apiKey: nil), for: .configRead).get().method
                == .jwt)
    }
}

// MARK: - REST (HummingbirdTesting, router only)

@Suite("Auth REST")
struct AuthRESTTests {
    @Test func exactFailureBodiesAndHeaders() async throws {
        let app = makeApplication(try await WorkerAuthenticator(configuration: authConfig()))
        try await app.test(.router) { client in
            try await client.execute(uri: "/templates", method: .get) { response in
                #expect(response.status == .unauthorized)
                #expect(
                    String(buffer: response.body)
                        == #"{"error":{"code":"AUTHENTICATION_FAILED","message":"Missing authentication credentials"}}"#)
                #expect(response.headers[.contentType] == "application/json")
                #expect(response.headers[AuthFailure.reasonField] == "missing")
                #expect(response.headers[AuthFailure.severityField] == "low")
                #expect(response.headers[.retryAfter] == nil)
            }
            try await client.execute(uri: "/templates", method: .get, headers: headers(apiKey: "nope")) { response in
                #expect(response.status == .unauthorized)
                #expect(
                    String(buffer: response.body)
                        == #"{"error":{"code":"AUTHENTICATION_FAILED","message":"Invalid API key"}}"#)
                #expect(response.headers[AuthFailure.reasonField] == "invalid")
                #expect(response.headers[AuthFailure.severityField] == "high")
                #expect(response.headers[.retryAfter] == "60")
            }
            try await client.execute(uri: "/templates", method: .get, headers: headers(bearer: "a.b.c")) { response in
                #expect(
                    String(buffer: response.body)
                        == #"{"error":{"code":"AUTHENTICATION_FAILED","message":"Invalid or expired token"}}"#)
                #expect(response.headers[.retryAfter] == "60")
            }
            try await client.execute(uri: "/config", method: .get, headers: headers(apiKey: "reader-key-0123456789")) { response in
                #expect(response.status == .forbidden)
                #expect(
                    String(buffer: response.body)
                        == #"{"error":{"code":"AUTHORIZATION_FAILED","message":"Missing required permission: worker:config_read"}}"#)
                #expect(response.headers[AuthFailure.reasonField] == "forbidden")
                #expect(response.headers[AuthFailure.severityField] == "medium")
                #expect(response.headers[.retryAfter] == "5")
            }
            var malformed = HTTPFields()
            malformed.append(HTTPField(name: .authorization, value: Array("Bearer x".utf8) + [0xFF, 0xFE]))
            try await client.execute(uri: "/templates", method: .get, headers: malformed) { response in
                #expect(response.status == .unauthorized)
                #expect(response.headers[AuthFailure.reasonField] == "malformed")
                #expect(response.headers[AuthFailure.severityField] == "high")
            }
            try await client.execute(uri: "/health", method: .get) { response in
                #expect(response.status == .ok)
            }
        }
    }

    @Test func jwtMatrix() async throws {
        let app = makeApplication(try await WorkerAuthenticator(configuration: authConfig()))
        let now = Int64(Date().timeIntervalSince1970)
        let cases: [(String, String, Int, String?)] = [
            ("valid", try await sign(claims(permissions: ["worker:templates_read"])), 200, nil),
            (
                "audience array",
                try await sign(
                    claims(
                        permissions: ["worker:templates_read"],
                        ["aud": .array([.string("other"), .string("worker-api")])])), 200, nil
            ),
            ("resource wildcard", try await sign(claims(permissions: ["worker:*"])), 200, nil),
            ("expired", try await sign(claims(permissions: ["worker:templates_read"], ["exp": .int(now - 3600)])), 401, "invalid"),
            ("wrong issuer", try await sign(claims(permissions: ["worker:templates_read"], ["iss": .string("evil")])), 401, "invalid"),
            ("wrong audience", try await sign(claims(permissions: ["worker:templates_read"], ["aud": .string("other")])), 401, "invalid"),
            ("no exp", try await sign(claims(permissions: ["worker:templates_read"], ["exp": nil])), 401, "invalid"),
            ("wrong key", try await sign(claims(permissions: ["worker:templates_read"]), key: otherSigningKey), 401, "invalid"),
            ("PS256 not allowed", try await sign(claims(permissions: ["worker:templates_read"]), pss: true), 401, "invalid"),
            ("unknown permission (strict)", try await sign(claims(permissions: ["worker:templates_read", "root"])), 401, "invalid"),
            ("missing permission", try await sign(claims(permissions: ["worker:config_read", "tasks:read"])), 403, "forbidden"),
        ]
        for (name, token, status, reason) in cases {
            let result = try await get(app, "/templates", headers(bearer: token))
            #expect(result.status == status, "\(name)")
            #expect(result.reason == reason, "\(name)")
        }
        // The bearer token is tried first: a bad token fails even next to a good API key.
        let badToken = try await get(app, "/templates", headers(bearer: "x.y.z", apiKey: "reader-key-0123456789"))
        #expect(badToken.status == 401 && badToken.message == "Invalid or expired token")
        // Another scheme is ignored, so the API key is used.
        var basic = headers(apiKey: "reader-key-0123456789")
        basic[.authorization] = "Basic dXNlcjpwdw=="
        #expect(try await get(app, "/templates", basic).status == 200)
    }

    @Test func jwtOptionsFromConfiguration() async throws {
        let lenient = makeApplication(
            try await WorkerAuthenticator(
                configuration: authConfig {
                    $0.strictValidation = false
                    $0.permissionsClaim = "scope"
                    $0.jwtAllowedAlgorithms = ["RS256", "PS256"]
                }))
        let scoped = try await sign(claims(permissions: [], ["scope": .string("openid worker:templates_read")]))
        #expect(try await get(lenient, "/templates", headers(bearer: scoped)).status == 200)
        let pss = try await sign(claims(permissions: [], ["scope": .array([.string("worker:templates_read")])]), pss: true)
        #expect(try await get(lenient, "/templates", headers(bearer: pss)).status == 200)
    }

    @Test func apiKeyMatrix() async throws {
        let app = makeApplication(try await WorkerAuthenticator(configuration: authConfig()))
        #expect(try await get(app, "/templates", headers(apiKey: "reader-key-0123456789")).status == 200)
        #expect(try await get(app, "/config", headers(apiKey: "admin-key-abcdefghijk")).status == 200)
        for wrong in ["reader-key-0123456788", "reader-key-012345678", "reader-key-01234567890", "", "r"] {
            let result = try await get(app, "/templates", headers(apiKey: wrong))
            #expect(result.status == 401 && result.reason == "invalid" && result.message == "Invalid API key", "\(wrong)")
        }
        let forbidden = try await get(app, "/config", headers(apiKey: "reader-key-0123456789"))
        #expect(forbidden.status == 403 && forbidden.message == "Missing required permission: worker:config_read")

        let custom = makeApplication(try await WorkerAuthenticator(configuration: authConfig { $0.apiKeyHeader = "X-Worker-Key" }))
        #expect(try await get(custom, "/templates", headers(apiKey: "reader-key-0123456789", header: "x-worker-key")).status == 200)
        #expect(try await get(custom, "/templates", headers(apiKey: "reader-key-0123456789")).reason == "missing")

        // The legacy api_key grants the three worker permissions; api_keys need api_keys_enabled.
        let legacyAuth = try await WorkerAuthenticator(
            configuration: authConfig {
                $0.jwtPublicKey = ""
                $0.apiKeysEnabled = false
                $0.apiKey = "legacy-0123"
            })
        #expect(legacyAuth.warnings.count == 2)
        let legacy = makeApplication(legacyAuth)
        #expect(try await get(legacy, "/config", headers(apiKey: "legacy-0123")).status == 200)
        #expect(try await get(legacy, "/templates", headers(apiKey: "reader-key-0123456789")).status == 401)
        #expect(try await get(legacy, "/templates", headers(bearer: try await sign(claims(permissions: ["worker:*"])))).status == 401)
        let principal = try await legacyAuth.authorize(AuthCredentials(authorization: nil, apiKey: "legacy-0123"), for: .templatesValidate)
            .get()
        #expect(principal.method == .apiKey(name: "api_key") && principal.subject == "api-key:api_key")
    }

    @Test func disabledAuthAllowsEverything() async throws {
        let app = makeApplication(try await WorkerAuthenticator(configuration: authConfig { $0.enabled = false }))
        #expect(try await get(app, "/config", HTTPFields()).status == 200)
        #expect(try await get(app, "/templates", headers(bearer: "garbage", apiKey: "garbage")).status == 200)
        #expect(try await get(makeApplication(.disabled), "/config", HTTPFields()).status == 200)
    }

    @Test func constantTimeComparison() {
        let key = Array("secret-key".utf8)
        #expect(APIKeyRegistry.constantTimeEquals(key, key))
        #expect(!APIKeyRegistry.constantTimeEquals(Array("secret-kez".utf8), key))
        #expect(!APIKeyRegistry.constantTimeEquals(Array("secret-keysecret-key".utf8), key))  // repeats the key
        #expect(!APIKeyRegistry.constantTimeEquals(Array("secret-k".utf8), key))
        #expect(!APIKeyRegistry.constantTimeEquals([], key) && !APIKeyRegistry.constantTimeEquals(key, []))
    }
}

// MARK: - gRPC interceptor (called directly)

@Suite("Auth gRPC")
struct AuthGRPCTests {
    /// Runs the interceptor for `method` with `metadata`; returns nil if the call went through, else the error.
    private func call(_ interceptor: GRPCAuthInterceptor, _ method: String, _ metadata: Metadata) async throws -> RPCError? {
        let parts = method.split(separator: "/")
        let descriptor = MethodDescriptor(fullyQualifiedService: String(parts[0]), method: String(parts[1]))
        return try await withServerContextRPCCancellationHandle { handle in
            let context = ServerContext(descriptor: descriptor, remotePeer: "test", localPeer: "test", cancellation: handle)
            let request = StreamingServerRequest(single: ServerRequest(metadata: metadata, message: "request"))
            let response: StreamingServerResponse<String> = try await interceptor.intercept(request: request, context: context) { _, _ in
                StreamingServerResponse(single: ServerResponse(message: "ok"))
            }
            switch response.accepted {
            case .success: return nil
            case .failure(let error): return error
            }
        }
    }

    @Test func protectedMethodsNeedCredentialsAndPermissions() async throws {
        let authenticator = try await WorkerAuthenticator(configuration: authConfig { $0.apiKeyHeader = "X-Worker-Key" })
        let interceptor = GRPCAuthInterceptor(authenticator: authenticator)
        let getConfig = "tasker.v1.WorkerConfigService/GetConfig"
        let listTemplates = "tasker.v1.WorkerTemplateService/ListTemplates"

        let missing = try await call(interceptor, getConfig, [:])
        #expect(missing?.code == .unauthenticated && missing?.message == "Invalid or expired credentials")
        #expect(try await call(interceptor, getConfig, ["x-worker-key": "wrong"])?.code == .unauthenticated)
        let denied = try await call(interceptor, getConfig, ["x-worker-key": "reader-key-0123456789"])
        #expect(denied?.code == .permissionDenied && denied?.message == "Insufficient permissions for this operation")
        #expect(try await call(interceptor, listTemplates, ["x-worker-key": "reader-key-0123456789"]) == nil)
        #expect(
            try await call(interceptor, "tasker.v1.WorkerTemplateService/GetTemplate", ["x-worker-key": "reader-key-0123456789"]) == nil)

        let token = try await sign(claims(permissions: ["worker:config_read"]))
        #expect(try await call(interceptor, getConfig, ["authorization": "Bearer \(token)"]) == nil)
        #expect(try await call(interceptor, listTemplates, ["authorization": "Bearer \(token)"])?.code == .permissionDenied)
        let expired = try await sign(claims(permissions: ["worker:config_read"], ["exp": .int(1_000)]))
        #expect(try await call(interceptor, getConfig, ["authorization": "Bearer \(expired)"])?.code == .unauthenticated)
        // Bearer first: a bad token is not rescued by a good key.
        #expect(
            try await call(
                interceptor, listTemplates,
                ["authorization": "Bearer x.y.z", "x-worker-key": "reader-key-0123456789"])?.code == .unauthenticated)
        #expect(try await call(interceptor, listTemplates, ["x-worker-key": "ключ"])?.code == .unauthenticated)

        for open in [
            "tasker.v1.WorkerHealthService/CheckReadiness", "grpc.health.v1.Health/Check",
            "grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        ] {
            #expect(try await call(interceptor, open, [:]) == nil, "\(open)")
        }
        #expect(
            interceptor.requiredPermission(for: MethodDescriptor(fullyQualifiedService: "tasker.v1.WorkerTemplateService", method: "Any"))
                == .templatesRead)
    }

    @Test func disabledAuthAndDescriptorRequirements() async throws {
        let open = GRPCAuthInterceptor(authenticator: .disabled)
        #expect(try await call(open, "tasker.v1.WorkerConfigService/GetConfig", [:]) == nil)
        let descriptor = MethodDescriptor(fullyQualifiedService: "tasker.v1.WorkerConfigService", method: "GetConfig")
        let custom = GRPCAuthInterceptor(
            authenticator: try await WorkerAuthenticator(configuration: authConfig()),
            methodRequirements: [descriptor: .configRead])
        #expect(try await call(custom, "tasker.v1.WorkerConfigService/GetConfig", [:])?.code == .unauthenticated)
        #expect(try await call(custom, "tasker.v1.WorkerTemplateService/ListTemplates", [:]) == nil)
    }
}
