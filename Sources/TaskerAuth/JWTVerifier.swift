import Foundation
import JWTKit
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Verifies bearer tokens with vapor/jwt-kit: RSA signature (one key, the algorithms of
/// `jwt_allowed_algorithms`), then `exp` and `nbf` (60 s leeway, as upstream's `jsonwebtoken` default; a
/// token whose `nbf` lies further in the future is rejected — upstream doesn't check `nbf`), the token's
/// lifetime (`jwt_max_token_lifetime_seconds`: `exp - iat`, or `exp - now` without `iat` or with `iat` in the
/// future; 0 = no limit),
/// `iss`, `aud`, and the permissions claim.
struct JWTVerifier: Sendable {
    /// What the verifier checks besides the signature.
    struct Rules: Sendable {
        var issuer: String
        var audience: String
        var permissionsClaim: String
        var strictValidation: Bool
        var leewaySeconds: Double = 60
        /// The longest `exp - iat` (or `exp - now` without `iat`) accepted, in seconds; 0 = no limit.
        var maxLifetimeSeconds: Double = 0
    }

    /// The RSA algorithms jwt-kit can verify, by JOSE name.
    static let supportedAlgorithms: [String: (digest: DigestAlgorithm, pss: Bool)] = [
        "RS256": (.sha256, false), "RS384": (.sha384, false), "RS512": (.sha512, false),
        "PS256": (.sha256, true), "PS384": (.sha384, true), "PS512": (.sha512, true),
    ]

    /// One key collection per allowed algorithm, each holding the same public key as its default signer.
    private let collections: [String: JWTKeyCollection]
    private let rules: Rules

    /// Builds the collections for `key` and every name in `algorithms` (already validated).
    init(key: Insecure.RSA.PublicKey, algorithms: [String], rules: Rules) async {
        var collections: [String: JWTKeyCollection] = [:]
        for name in algorithms {
            guard let spec = Self.supportedAlgorithms[name] else { continue }
            let collection = JWTKeyCollection()
            if spec.pss {
                await collection.add(pss: key, digestAlgorithm: spec.digest)
            } else {
                await collection.add(rsa: key, digestAlgorithm: spec.digest)
            }
            collections[name] = collection
        }
        self.collections = collections
        self.rules = rules
    }

    /// Why a token was rejected (internal: logged at debug level, never sent to the client).
    enum Rejection: Error, Equatable, CustomStringConvertible {
        case malformed
        case algorithmNotAllowed(String)
        case signatureOrFormat
        case missingClaim(String)
        case expired
        case notYetValid
        case lifetimeTooLong
        case wrongIssuer
        case wrongAudience
        case badPermissionsClaim
        case unknownPermissions([String])

        var description: String {
            switch self {
            case .malformed: "token is not a compact JWS"
            case .algorithmNotAllowed(let alg): "algorithm \(alg) is not in jwt_allowed_algorithms"
            case .signatureOrFormat: "signature or payload did not verify"
            case .missingClaim(let name): "claim \(name) is missing or has the wrong type"
            case .expired: "token expired"
            case .notYetValid: "token not valid yet (nbf in the future)"
            case .lifetimeTooLong: "token lifetime exceeds jwt_max_token_lifetime_seconds"
            case .wrongIssuer: "issuer does not match jwt_issuer"
            case .wrongAudience: "audience does not include jwt_audience"
            case .badPermissionsClaim: "permissions claim is not a string array"
            case .unknownPermissions(let names): "unknown permissions \(names.joined(separator: ", "))"
            }
        }
    }

    /// The principal for `token`, or the reason it was rejected.
    func verify(_ token: String, now: Date = Date()) async -> Result<AuthPrincipal, Rejection> {
        guard let alg = Self.headerAlgorithm(of: token) else { return .failure(.malformed) }
        guard let collection = collections[alg] else { return .failure(.algorithmNotAllowed(alg)) }
        let claims: TokenClaims
        do {
            claims = try await collection.verify(token, as: TokenClaims.self)
        } catch {
            return .failure(.signatureOrFormat)
        }
        return check(claims.values, now: now)
    }

    /// Checks the registered claims and extracts the permissions.
    private func check(_ claims: [String: JSONValue], now: Date) -> Result<AuthPrincipal, Rejection> {
        guard let subject = claims["sub"]?.stringValue else { return .failure(.missingClaim("sub")) }
        guard let exp = claims["exp"]?.doubleValue else { return .failure(.missingClaim("exp")) }
        guard exp + rules.leewaySeconds > now.timeIntervalSince1970 else { return .failure(.expired) }
        if let notBefore = claims["nbf"] {
            guard let nbf = notBefore.doubleValue else { return .failure(.missingClaim("nbf")) }
            guard nbf - rules.leewaySeconds <= now.timeIntervalSince1970 else { return .failure(.notYetValid) }
        }
        if rules.maxLifetimeSeconds > 0 {
            // Measured from `iat`, but never from later than now: a token "issued" in the future
            // would otherwise be usable from now until its far `exp`.
            let start: Double
            switch claims["iat"] {
            case nil, .null: start = now.timeIntervalSince1970
            case let value?:
                guard let iat = value.doubleValue else { return .failure(.missingClaim("iat")) }
                start = min(iat, now.timeIntervalSince1970)
            }
            guard exp - start <= rules.maxLifetimeSeconds else { return .failure(.lifetimeTooLong) }
        }
        if !rules.issuer.isEmpty {
            guard let issuer = claims["iss"]?.stringValue else { return .failure(.missingClaim("iss")) }
            guard issuer == rules.issuer else { return .failure(.wrongIssuer) }
        }
        if !rules.audience.isEmpty {
            let audiences: [String]
            switch claims["aud"] {
            case .string(let single): audiences = [single]
            case .array(let items): audiences = items.compactMap(\.stringValue)
            default: return .failure(.missingClaim("aud"))
            }
            guard audiences.contains(rules.audience) else { return .failure(.wrongAudience) }
        }
        let permissions: [String]
        switch claims[rules.permissionsClaim] {
        case nil, .null:
            permissions = []
        case .array(let items):
            let strings = items.compactMap(\.stringValue)
            guard strings.count == items.count else { return .failure(.badPermissionsClaim) }
            permissions = strings
        case .string(let spaced):  // OAuth-style "scope" claims: space-separated
            permissions = spaced.split(separator: " ").map(String.init)
        default:
            return .failure(.badPermissionsClaim)
        }
        if rules.strictValidation {
            let unknown = PermissionVocabulary.unknown(in: permissions)
            guard unknown.isEmpty else { return .failure(.unknownPermissions(unknown)) }
        }
        return .success(AuthPrincipal(subject: subject, permissions: permissions, method: .jwt))
    }

    /// The `alg` of a compact JWS header, or nil if the token is not `header.payload.signature`.
    static func headerAlgorithm(of token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = base64URLDecode(parts[0]),
            case .object(let fields)? = try? UntrustedJSON.decode(JSONValue.self, from: header, what: "the JWT header")
        else { return nil }
        return fields["alg"]?.stringValue
    }

    private static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}

/// Every claim of a token, decoded as JSON; the checks are done by ``JWTVerifier`` after the signature.
private struct TokenClaims: JWTPayload {
    var values: [String: JSONValue]

    init(from decoder: any Decoder) throws {
        values = try decoder.singleValueContainer().decode([String: JSONValue].self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(values)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
