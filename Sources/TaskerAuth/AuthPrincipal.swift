/// Who made a request, how they proved it, and what they may do. Never holds the credential itself.
package struct AuthPrincipal: Sendable, Equatable, CustomStringConvertible {
    /// How the principal authenticated.
    package enum Method: Sendable, Equatable, CustomStringConvertible {
        /// A verified JWT (`Authorization: Bearer …`).
        case jwt
        /// A configured API key; `name` is the key's `description`, or `api_keys[<index>]`, or `api_key`
        /// for the legacy single key — never the key itself.
        case apiKey(name: String)
        /// Auth is disabled (`web.auth.enabled = false`): everything is allowed.
        case disabled

        /// `jwt`, `api_key(<name>)` or `disabled`.
        package var description: String {
            switch self {
            case .jwt: "jwt"
            case .apiKey(let name): "api_key(\(name))"
            case .disabled: "disabled"
            }
        }
    }

    /// The JWT `sub`, `api-key:<name>` for API keys, or `anonymous` when auth is disabled.
    package var subject: String
    /// The granted permissions (exact names or `resource:*` wildcards), sorted.
    package var permissions: [String]
    /// How the principal authenticated.
    package var method: Method

    /// Creates a principal.
    package init(subject: String, permissions: [String], method: Method) {
        self.subject = subject
        self.permissions = permissions.sorted()
        self.method = method
    }

    /// The principal used when auth is disabled.
    package static let anonymous = AuthPrincipal(subject: "anonymous", permissions: [], method: .disabled)

    /// Whether the principal may do what `permission` guards. Always true when auth is disabled.
    package func has(_ permission: WorkerPermission) -> Bool {
        has(permissionNamed: permission.rawValue)
    }

    /// Whether the principal may do what the upstream permission `permission` (e.g. `tasks:read`) guards.
    package func has(permissionNamed permission: String) -> Bool {
        if method == .disabled { return true }
        return permissions.contains { PermissionVocabulary.grant($0, satisfies: permission) }
    }

    /// `subject via method [permissions]`; contains no credential.
    package var description: String {
        "\(subject) via \(method) [\(permissions.joined(separator: ", "))]"
    }
}

/// Why a request was refused, in the upstream shape (`x-auth-failure-reason` / `-severity`).
package struct AuthFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `x-auth-failure-reason` value.
    package enum Kind: String, Sendable, Equatable {
        /// No credentials were sent (401).
        case missing
        /// A credential header is not visible ASCII (401).
        case malformed
        /// The token or key did not verify (401).
        case invalid
        /// Authenticated, but the permission is missing (403).
        case forbidden
    }

    /// The `x-auth-failure-severity` value; `medium` and `high` add a `Retry-After`.
    package enum Severity: String, Sendable, Equatable {
        /// Missing credentials: no `Retry-After`.
        case low
        /// Missing permission: `Retry-After: 5`.
        case medium
        /// Malformed or invalid credentials: `Retry-After: 60`.
        case high

        /// `Retry-After` seconds: 5 for `medium`, 60 for `high`, none for `low`.
        package var retryAfterSeconds: Int? {
            switch self {
            case .low: nil
            case .medium: 5
            case .high: 60
            }
        }
    }

    /// The failure reason.
    package var kind: Kind
    /// The client-facing message (the upstream wording; never contains a credential).
    package var message: String
    /// The failure severity.
    var severity: Severity

    /// Creates a failure.
    package init(kind: Kind, message: String, severity: Severity) {
        self.kind = kind
        self.message = message
        self.severity = severity
    }

    /// Whether this is an authorization (403) rather than an authentication (401) failure.
    package var isForbidden: Bool { kind == .forbidden }

    /// No credentials: `missing`/`low`, "Missing authentication credentials".
    static let missingCredentials = AuthFailure(
        kind: .missing, message: "Missing authentication credentials", severity: .low)
    /// `Authorization` header is not visible ASCII: `malformed`/`high`.
    static let malformedAuthorizationHeader = AuthFailure(
        kind: .malformed, message: "Malformed Authorization header", severity: .high)
    /// API key header is not visible ASCII: `malformed`/`high`.
    static let malformedAPIKeyHeader = AuthFailure(
        kind: .malformed, message: "Malformed API key header", severity: .high)
    /// The bearer token did not verify: `invalid`/`high`, "Invalid or expired token".
    static let invalidToken = AuthFailure(
        kind: .invalid, message: "Invalid or expired token", severity: .high)
    /// The API key matched no configured key: `invalid`/`high`, "Invalid API key".
    static let invalidAPIKey = AuthFailure(kind: .invalid, message: "Invalid API key", severity: .high)

    /// The principal lacks `permission`: `forbidden`/`medium`, "Missing required permission: <perm>".
    static func missingPermission(_ permission: WorkerPermission) -> AuthFailure {
        missingPermission(named: permission.rawValue)
    }

    /// The principal lacks the upstream permission `permission`.
    static func missingPermission(named permission: String) -> AuthFailure {
        AuthFailure(kind: .forbidden, message: "Missing required permission: \(permission)", severity: .medium)
    }

    /// `<kind>/<severity>: <message>`.
    package var description: String { "\(kind.rawValue)/\(severity.rawValue): \(message)" }
}

/// `web.auth` cannot be turned into a working authenticator. Names the offending key; never shows its value.
package struct AuthConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The configuration key, e.g. `worker.web.auth.jwt_public_key_path`.
    package var keyPath: String
    /// What is wrong with it.
    package var reason: String

    /// Creates an error about `worker.web.auth.<key>`.
    package init(key: String, reason: String) {
        self.keyPath = key.isEmpty ? "worker.web.auth" : "worker.web.auth.\(key)"
        self.reason = reason
    }

    /// `invalid worker.web.auth.<key>: <reason>`.
    package var description: String { "invalid \(keyPath): \(reason)" }
}
