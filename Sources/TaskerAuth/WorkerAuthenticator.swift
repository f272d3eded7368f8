import Foundation
import JWTKit
import Logging
import TaskerModel

/// The credentials of one request, as raw header bytes (REST headers or gRPC metadata).
///
/// Its `description` shows only which credentials are present, never their values.
package struct AuthCredentials: Sendable, CustomStringConvertible {
    /// The `Authorization` header value, if sent.
    package var authorization: [UInt8]?
    /// The API key header value (`api_key_header`, default `X-API-Key`), if sent.
    package var apiKey: [UInt8]?

    /// Creates credentials from raw header bytes (non-ASCII bytes make the request `malformed`).
    package init(authorizationBytes: [UInt8]?, apiKeyBytes: [UInt8]?) {
        self.authorization = authorizationBytes
        self.apiKey = apiKeyBytes
    }

    /// Creates credentials from header strings.
    package init(authorization: String?, apiKey: String?) {
        self.init(authorizationBytes: authorization.map { Array($0.utf8) }, apiKeyBytes: apiKey.map { Array($0.utf8) })
    }

    /// `AuthCredentials(authorization: present|absent, apiKey: present|absent)`.
    package var description: String {
        "AuthCredentials(authorization: \(authorization == nil ? "absent" : "present"), "
            + "apiKey: \(apiKey == nil ? "absent" : "present"))"
    }
}

/// Authentication (JWT or API key) and authorization (``WorkerPermission``) for REST and gRPC, built from
/// `[worker.web.auth]`.
///
/// Rules (upstream's):
/// - auth disabled → every request is ``AuthPrincipal/anonymous`` and every permission is granted;
/// - a header that is not visible ASCII (`Authorization` or the API key header) → `malformed`;
/// - `Authorization: Bearer <token>` (the scheme in any case, RFC 7235) is tried first (any other scheme is
///   ignored), then the API key header;
///   neither → `missing`; a bad token → "Invalid or expired token"; a bad key → "Invalid API key";
/// - a missing permission → `forbidden`, "Missing required permission: <perm>".
///
/// Key material: `jwt_public_key_path` (takes precedence) or `jwt_public_key` (PEM, `SubjectPublicKeyInfo`
/// or certificate; single-line PEM and literal `\n` are accepted), verified for every algorithm in
/// `jwt_allowed_algorithms` (RS256/384/512, PS256/384/512). API keys: see `APIKeyRegistry` — entries of
/// `api_keys` only when `api_keys_enabled = true`, and the legacy `api_key`, which grants all three worker
/// permissions. An empty `jwt_issuer` / `jwt_audience` disables that check. `jwks` is not supported.
package struct WorkerAuthenticator: Sendable, CustomStringConvertible {
    /// Whether `web.auth.enabled` is true.
    package let isEnabled: Bool
    /// The API key header name as configured (e.g. `X-API-Key`).
    package let apiKeyHeader: String
    /// Non-fatal configuration notes worth logging at boot (no secrets), e.g. ignored `api_keys`.
    package let warnings: [String]

    private let jwt: JWTVerifier?
    private let apiKeys: APIKeyRegistry
    private let logger: Logger

    /// An authenticator that allows everything (auth disabled).
    package static let disabled = WorkerAuthenticator()

    private init() {
        isEnabled = false
        apiKeyHeader = "X-API-Key"
        warnings = []
        jwt = nil
        apiKeys = .empty
        logger = Logger(label: "tasker.worker.auth")
    }

    /// Builds the authenticator from `[worker.web.auth]`.
    ///
    /// - Throws: ``AuthConfigurationError`` naming the key when auth is enabled and the configuration cannot
    ///   work: no usable key material at all, an unreadable key file, a PEM that is not an RSA public key
    ///   of at least 2048 bits, an unsupported algorithm or verification method, an empty API key, an
    ///   invalid header name, or (under `strict_validation`) an unknown permission on an API key.
    package init(
        configuration auth: WorkerConfiguration.Auth,
        logger: Logger = Logger(label: "tasker.worker.auth")
    ) async throws(AuthConfigurationError) {
        self.logger = logger
        self.isEnabled = auth.enabled
        self.apiKeyHeader = auth.apiKeyHeader
        guard auth.enabled else {
            warnings = []
            jwt = nil
            apiKeys = .empty
            return
        }
        guard Self.isValidHeaderName(auth.apiKeyHeader) else {
            throw AuthConfigurationError(key: "api_key_header", reason: "is not a valid HTTP header name")
        }
        var warnings: [String] = []
        if !auth.apiKeysEnabled, !auth.apiKeys.isEmpty {
            warnings.append("worker.web.auth.api_keys has \(auth.apiKeys.count) entries but api_keys_enabled = false; they are ignored")
        }
        apiKeys = try APIKeyRegistry(configuration: auth)
        if let key = try Self.loadPublicKey(auth) {
            let algorithms = try Self.validatedAlgorithms(auth.jwtAllowedAlgorithms)
            guard !auth.permissionsClaim.isEmpty else {
                throw AuthConfigurationError(key: "permissions_claim", reason: "is empty")
            }
            let rules = JWTVerifier.Rules(
                issuer: auth.jwtIssuer, audience: auth.jwtAudience,
                permissionsClaim: auth.permissionsClaim,
                strictValidation: auth.strictValidation,
                maxLifetimeSeconds: Double(auth.jwtMaxTokenLifetimeSeconds))
            jwt = await JWTVerifier(key: key, algorithms: algorithms, rules: rules)
        } else {
            jwt = nil
            if apiKeys.isEmpty {
                throw AuthConfigurationError(
                    key: "",
                    reason: "enabled = true but no credential can be verified: set jwt_public_key_path or "
                        + "jwt_public_key, api_key, or api_keys with api_keys_enabled = true")
            }
            warnings.append("worker.web.auth has no JWT public key; bearer tokens will be rejected")
        }
        self.warnings = warnings
    }

    /// Authenticates a request. Auth disabled → ``AuthPrincipal/anonymous``.
    package func authenticate(_ credentials: AuthCredentials) async -> Result<AuthPrincipal, AuthFailure> {
        guard isEnabled else { return .success(.anonymous) }
        var bearer: String?
        if let raw = credentials.authorization {
            guard let value = Self.visibleASCII(raw) else { return fail(.malformedAuthorizationHeader) }
            bearer = Self.bearerToken(value)
        }
        var apiKey: [UInt8]?
        if let raw = credentials.apiKey {
            guard Self.visibleASCII(raw) != nil else { return fail(.malformedAPIKeyHeader) }
            apiKey = raw
        }
        if let bearer {
            guard let jwt else {
                logger.debug("bearer token rejected", metadata: ["reason": "no JWT public key configured"])
                return fail(.invalidToken)
            }
            switch await jwt.verify(bearer) {
            case .success(let principal):
                return .success(principal)
            case .failure(let rejection):
                logger.debug("bearer token rejected", metadata: ["reason": "\(rejection)"])
                return fail(.invalidToken)
            }
        }
        if let apiKey {
            if let principal = apiKeys.authenticate(apiKey) { return .success(principal) }
            return fail(.invalidAPIKey)
        }
        return fail(.missingCredentials)
    }

    /// Authenticates the request, then checks that the principal has `permission`.
    package func authorize(
        _ credentials: AuthCredentials,
        for permission: WorkerPermission
    ) async -> Result<AuthPrincipal, AuthFailure> {
        await authorize(credentials, forPermissionNamed: permission.rawValue)
    }

    /// Authenticates the request, then checks that the principal has the upstream permission `permission`
    /// (e.g. `tasks:read`; the orchestration's routes use names outside ``WorkerPermission``).
    package func authorize(
        _ credentials: AuthCredentials,
        forPermissionNamed permission: String
    ) async -> Result<AuthPrincipal, AuthFailure> {
        switch await authenticate(credentials) {
        case .failure(let failure):
            return .failure(failure)
        case .success(let principal):
            guard principal.has(permissionNamed: permission) else {
                logger.debug(
                    "permission denied",
                    metadata: [
                        "subject": "\(principal.subject)", "required_permission": "\(permission)",
                    ])
                return .failure(.missingPermission(named: permission))
            }
            return .success(principal)
        }
    }

    /// `WorkerAuthenticator(enabled, jwt: yes|no, api keys: <names>)`; never shows key material.
    package var description: String {
        guard isEnabled else { return "WorkerAuthenticator(disabled)" }
        return "WorkerAuthenticator(enabled, jwt: \(jwt == nil ? "no" : "yes"), header: \(apiKeyHeader), \(apiKeys))"
    }

    private func fail(_ failure: AuthFailure) -> Result<AuthPrincipal, AuthFailure> {
        logger.debug("authentication failed", metadata: ["reason": "\(failure.kind.rawValue)"])
        return .failure(failure)
    }

    /// The token of a `Bearer <token>` credential; the scheme is matched case-insensitively (RFC 7235
    /// §2.1), with one or more spaces before the token. Nil for any other scheme.
    package static func bearerToken(_ value: String) -> String? {
        let scheme = "bearer"
        guard value.utf8.count > scheme.utf8.count,
            value.prefix(scheme.count).lowercased() == scheme,
            value.dropFirst(scheme.count).first == " "
        else { return nil }
        let token = value.dropFirst(scheme.count).drop { $0 == " " }
        return token.isEmpty ? nil : String(token)
    }

    // MARK: - Configuration helpers

    /// The header value as a string if every byte is visible ASCII or a tab (the rule of the `http` crate's
    /// `HeaderValue::to_str`, which upstream uses), else nil.
    static func visibleASCII(_ bytes: [UInt8]) -> String? {
        guard bytes.allSatisfy({ ($0 >= 0x20 && $0 < 0x7F) || $0 == 0x09 }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func isValidHeaderName(_ name: String) -> Bool {
        let tokenSymbols = Set("!#$%&'*+-.^_`|~".utf8)
        return !name.isEmpty
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || tokenSymbols.contains(byte)
            }
    }

    private static func validatedAlgorithms(_ names: [String]) throws(AuthConfigurationError) -> [String] {
        guard !names.isEmpty else {
            throw AuthConfigurationError(key: "jwt_allowed_algorithms", reason: "is empty")
        }
        for name in names where JWTVerifier.supportedAlgorithms[name] == nil {
            throw AuthConfigurationError(
                key: "jwt_allowed_algorithms",
                reason: "\(name) is not supported (supported: RS256, RS384, RS512, PS256, PS384, PS512)")
        }
        return names
    }

    /// The configured RSA public key, or nil when none is configured.
    private static func loadPublicKey(_ auth: WorkerConfiguration.Auth) throws(AuthConfigurationError) -> Insecure.RSA.PublicKey? {
        switch auth.jwtVerificationMethod {
        case "public_key": break
        case "jwks":
            throw AuthConfigurationError(
                key: "jwt_verification_method", reason: "jwks is not supported by this worker; use public_key")
        default:
            throw AuthConfigurationError(key: "jwt_verification_method", reason: "must be public_key")
        }
        let key: String
        let pem: String
        if !auth.jwtPublicKeyPath.isEmpty {
            key = "jwt_public_key_path"
            do {
                // Bounded and regular files only: a path to /dev/zero is an error, not an endless read.
                pem = String(decoding: try ConfigurationFile.read(auth.jwtPublicKeyPath, key: key), as: UTF8.self)
            } catch {
                throw AuthConfigurationError(key: key, reason: "cannot read \(auth.jwtPublicKeyPath): it \(error.reason)")
            }
        } else if !auth.jwtPublicKey.isEmpty {
            key = "jwt_public_key"
            pem = auth.jwtPublicKey
        } else {
            return nil
        }
        let normalized = normalizePEM(pem)
        if let publicKey = try? Insecure.RSA.PublicKey(pem: normalized) { return publicKey }
        if let publicKey = try? Insecure.RSA.PublicKey(certificatePEM: normalized) { return publicKey }
        throw AuthConfigurationError(
            key: key, reason: "is not a PEM RSA public key (BEGIN PUBLIC KEY or CERTIFICATE) of at least 2048 bits")
    }

    /// Re-wraps a PEM block at 64 columns (accepts one-line PEM and literal `\n`, as found in env vars).
    static func normalizePEM(_ text: String) -> String {
        let pem = text.replacingOccurrences(of: "\\n", with: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
        guard let begin = pem.range(of: "-----BEGIN "),
            let headerEnd = pem.range(of: "-----", range: begin.upperBound..<pem.endIndex),
            let footer = pem.range(of: "-----END ", range: headerEnd.upperBound..<pem.endIndex)
        else { return pem }
        let body = pem[headerEnd.upperBound..<footer.lowerBound].filter { !$0.isWhitespace }
        var lines = [String(pem[begin.lowerBound..<headerEnd.upperBound])]
        var index = body.startIndex
        while index < body.endIndex {
            let end = body.index(index, offsetBy: 64, limitedBy: body.endIndex) ?? body.endIndex
            lines.append(String(body[index..<end]))
            index = end
        }
        lines.append(String(pem[footer.lowerBound...]))
        return lines.joined(separator: "\n") + "\n"
    }
}
