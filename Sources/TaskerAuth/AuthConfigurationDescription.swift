import TaskerModel

// Redacted descriptions of the auth configuration, so that `"\(auth)"` in a log line or an error message
// never shows key material. `Mirror`-based output (`dump`, `debugPrint` of containers) is redacted too.

extension WorkerConfiguration.Auth: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The settings with `jwt_public_key`, `jwt_private_key`, `api_key` and every `api_keys[].key` shown as
    /// `***` (or `""` when empty).
    public var description: String {
        var parts = [
            "enabled: \(enabled)",
            "jwt_verification_method: \(jwtVerificationMethod)",
            "jwt_issuer: \(jwtIssuer)",
            "jwt_audience: \(jwtAudience)",
            "jwt_public_key: \(Self.mask(jwtPublicKey))",
            "jwt_public_key_path: \(jwtPublicKeyPath)",
            "jwt_private_key: \(Self.mask(jwtPrivateKey))",
            "jwt_allowed_algorithms: \(jwtAllowedAlgorithms)",
            "permissions_claim: \(permissionsClaim)",
            "strict_validation: \(strictValidation)",
            "api_key: \(Self.mask(apiKey))",
            "api_key_header: \(apiKeyHeader)",
            "api_keys_enabled: \(apiKeysEnabled)",
        ]
        parts.append("api_keys: [\(apiKeys.map(\.debugDescription).joined(separator: ", "))]")
        return "Auth(\(parts.joined(separator: ", ")))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror with the secrets replaced by `***`.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "enabled": enabled, "jwtIssuer": jwtIssuer, "jwtAudience": jwtAudience,
                "jwtPublicKey": Self.mask(jwtPublicKey), "jwtPublicKeyPath": jwtPublicKeyPath,
                "jwtPrivateKey": Self.mask(jwtPrivateKey), "jwtVerificationMethod": jwtVerificationMethod,
                "jwtAllowedAlgorithms": jwtAllowedAlgorithms, "permissionsClaim": permissionsClaim,
                "strictValidation": strictValidation, "apiKey": Self.mask(apiKey), "apiKeyHeader": apiKeyHeader,
                "apiKeysEnabled": apiKeysEnabled, "apiKeys": apiKeys,
            ], displayStyle: .struct)
    }

    static func mask(_ secret: String) -> String { secret.isEmpty ? "\"\"" : "***" }
}

// `APIKey` has a stored `description` (the key's label), so it gets a redacted `debugDescription` and
// mirror instead of a `CustomStringConvertible` conformance; string interpolation then uses the former.
extension WorkerConfiguration.APIKey: CustomDebugStringConvertible, CustomReflectable {
    /// `APIKey(key: ***, permissions: […], description: …)`.
    public var debugDescription: String {
        "APIKey(key: \(WorkerConfiguration.Auth.mask(key)), permissions: \(permissions), description: \(description))"
    }

    /// A mirror with the key replaced by `***`.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "key": WorkerConfiguration.Auth.mask(key), "permissions": permissions,
                "description": description,
            ], displayStyle: .struct)
    }
}
