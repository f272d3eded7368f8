import TOMLKit
import TaskerStepModel
import TaskerText

/// Hiding secrets in rendered configuration and in error messages.
///
/// Redacted: passwords inside any URL or keyword DSN (`postgresql://user:***@host/db?password=***`,
/// `host=h password=***`; see `redactCredentials`), and the whole value of string
/// keys that hold key material or credentials — `jwt_public_key`, `jwt_private_key`, `api_key`,
/// `api_keys[].key`, and any key whose name contains `password`, `secret` or `token`. Empty strings stay
/// empty (so "not configured" remains visible); numbers and booleans are never redacted.
extension Redaction {
    private static let secretKeys: Set<String> = ["jwt_public_key", "jwt_private_key", "api_key", "key"]
    private static let secretFragments = ["password", "secret", "token", "private_key"]

    /// Whether a string stored under `key` (the last key-path component) is a secret.
    static func isSecretKey(_ key: String) -> Bool {
        let lowered = key.lowercased()
        return secretKeys.contains(lowered) || secretFragments.contains { lowered.contains($0) }
    }

    /// Redacts a whole tree (snake_case keys).
    static func redact(_ value: ConfigValue, key: String = "") -> ConfigValue {
        switch value {
        case .string(let s):
            if isSecretKey(key) { return .string(s.isEmpty ? s : mask) }
            return .string(redactCredentials(s))
        case .array(let items):
            return .array(items.map { redact($0, key: key) })
        case .table(let t):
            var out: [String: ConfigValue] = [:]
            for (k, v) in t { out[k] = redact(v, key: k) }
            return .table(out)
        default:
            return value
        }
    }

    /// Redacts one value for an error message about `keyPath`.
    static func redact(_ value: ConfigValue, keyPath: String) -> ConfigValue {
        let last = keyPath.split(separator: ".").last.map { String($0.split(separator: "[").first ?? $0) } ?? keyPath
        return redact(value, key: last)
    }

    /// Redacts the value of an allow-listed environment variable for an error message.
    static func redactEnvironmentValue(_ value: String, variable: String) -> String {
        if variable.hasPrefix("TASKER_JWT_PUBLIC_KEY") && !variable.hasSuffix("_PATH") { return value.isEmpty ? value : mask }
        return redactCredentials(value)
    }
}

extension TaskerConfiguration {
    /// The configuration as TOML with secrets redacted (see `Redaction` rules: URL passwords,
    /// JWT keys, API keys, anything named like a password, secret or token). Keys are sorted.
    public func renderRedacted() -> String {
        redactedTree().renderTOML()
    }

    /// The configuration as JSON with the same redaction as `renderRedacted()`, for a `/config` endpoint.
    public func renderRedactedJSON() -> String {
        redactedTree().tomlTable().convert(to: .json)
    }

    func redactedTree() -> ConfigValue {
        Redaction.redact((try? ConfigValue.encoding(self)) ?? .table([:]))
    }
}
