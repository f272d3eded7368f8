import CryptoExtras
import Foundation
import JWTKit
import TaskerModel

// Authentication fixtures of AuthTests and OperatorHardeningTests (TaskerWorkerTests) and the system tests that
// run a worker with authentication on (AuthIntegrationTests, SurfaceHardeningTests).

/// RSA key pairs generated once per test run (2048-bit generation is slow).
package let signingKey = try! JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
package let otherSigningKey = try! JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))

/// A JWT payload with arbitrary claims, for signing test tokens.
package struct AnyClaims: JWTPayload {
    package var values: [String: JSONValue]
    package init(_ values: [String: JSONValue]) { self.values = values }
    package init(from decoder: any Decoder) throws { values = try decoder.singleValueContainer().decode([String: JSONValue].self) }
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(values)
    }
    package func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Standard claims (issuer `tasker-worker`, audience `worker-api`, valid one hour) overridden by `changes`.
package func claims(permissions: [String], _ changes: [String: JSONValue?] = [:]) -> AnyClaims {
    var values: [String: JSONValue] = [
        "sub": .string("svc-test"), "iss": .string("tasker-worker"), "aud": .string("worker-api"),
        "iat": .int(Int64(Date().timeIntervalSince1970)), "exp": .int(Int64(Date().timeIntervalSince1970) + 3600),
        "permissions": .array(permissions.map(JSONValue.string)),
    ]
    for (key, value) in changes { values[key] = value }
    return AnyClaims(values)
}

/// Signs `payload` with `key` (RS256 unless `pss`).
package func sign(_ payload: AnyClaims, key: JWTKit.Insecure.RSA.PrivateKey = signingKey, pss: Bool = false) async throws -> String {
    let keys = JWTKeyCollection()
    if pss {
        await keys.add(pss: key, digestAlgorithm: .sha256)
    } else {
        await keys.add(rsa: key, digestAlgorithm: .sha256)
    }
    return try await keys.sign(payload)
}

/// A token of `svc-test` that may read the templates and the configuration, its standard claims
/// overridden by `changes` (SurfaceHardeningTests, OperatorHardeningTests).
package func readerToken(_ changes: [String: JSONValue?] = [:]) async throws -> String {
    try await sign(claims(permissions: ["worker:templates_read", "worker:config_read"], changes))
}

package func authConfig(_ edit: (inout WorkerConfiguration.Auth) -> Void = { _ in }) -> WorkerConfiguration.Auth {
    var auth = WorkerConfiguration.Auth()
    auth.enabled = true
    auth.jwtPublicKey = signingKey.publicKey.pemRepresentation
    auth.apiKeysEnabled = true
    auth.apiKeys = [
        .init(key: "reader-key-0123456789", permissions: ["worker:templates_read"], description: "reader"),
        .init(key: "admin-key-abcdefghijk", permissions: ["worker:*", "templates:*"]),
    ]
    edit(&auth)
    return auth
}
