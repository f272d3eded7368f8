import TaskerModel

/// The configured API keys, checked in constant time.
///
/// Sources (in this order; the first match wins, but every key is always compared):
/// - `api_keys = [{key, permissions, description}]`, used only when `api_keys_enabled = true` (as upstream);
/// - the legacy single `api_key`, when non-empty. It has no permission list of its own; it is the worker
///   operator's key and gets all three worker permissions (``WorkerPermission/allCases``).
package struct APIKeyRegistry: Sendable, CustomStringConvertible {
    struct Entry: Sendable {
        let key: [UInt8]
        let name: String
        let permissions: [String]
    }

    private let entries: [Entry]

    var isEmpty: Bool { entries.isEmpty }

    /// A registry with no keys.
    static let empty = APIKeyRegistry()

    private init() { entries = [] }

    /// Builds the registry; throws on an empty key or (under `strict_validation`) an unknown permission.
    init(configuration auth: WorkerConfiguration.Auth) throws(AuthConfigurationError) {
        var entries: [Entry] = []
        if auth.apiKeysEnabled {
            for (index, apiKey) in auth.apiKeys.enumerated() {
                guard !apiKey.key.isEmpty else {
                    throw AuthConfigurationError(key: "api_keys[\(index)].key", reason: "is empty")
                }
                let unknown = PermissionVocabulary.unknown(in: apiKey.permissions)
                if auth.strictValidation, !unknown.isEmpty {
                    throw AuthConfigurationError(
                        key: "api_keys[\(index)].permissions",
                        reason: "unknown permission(s) \(unknown.joined(separator: ", ")) "
                            + "(strict_validation = true; known: resource:action names or resource:*)")
                }
                let name = apiKey.description.isEmpty ? "api_keys[\(index)]" : apiKey.description
                entries.append(Entry(key: Array(apiKey.key.utf8), name: name, permissions: apiKey.permissions))
            }
        }
        if !auth.apiKey.isEmpty {
            entries.append(
                Entry(
                    key: Array(auth.apiKey.utf8), name: "api_key",
                    permissions: WorkerPermission.allCases.map(\.rawValue)))
        }
        self.entries = entries
    }

    /// The principal for `candidate`, or nil if it matches no configured key.
    ///
    /// Every configured key is compared, each in time that depends only on the candidate's length, so the
    /// response time tells nothing about which key (or how much of one) matched.
    func authenticate(_ candidate: [UInt8]) -> AuthPrincipal? {
        var matched: Int = -1
        for (index, entry) in entries.enumerated() {
            let equal = Self.constantTimeEquals(candidate, entry.key)
            // Select without branching on the secret comparison: keep the first match.
            let take = equal && matched < 0
            matched = take ? index : matched
        }
        guard matched >= 0 else { return nil }
        let entry = entries[matched]
        return AuthPrincipal(
            subject: "api-key:\(entry.name)", permissions: entry.permissions,
            method: .apiKey(name: entry.name))
    }

    /// Compares `candidate` with `expected` (non-empty) in time that depends only on `candidate.count`.
    package static func constantTimeEquals(_ candidate: [UInt8], _ expected: [UInt8]) -> Bool {
        guard !expected.isEmpty else { return false }
        var difference = UInt(bitPattern: candidate.count ^ expected.count)
        let expectedCount = expected.count
        for index in 0..<candidate.count {
            difference |= UInt(candidate[index] ^ expected[index % expectedCount])
        }
        return difference == 0
    }

    /// `APIKeyRegistry(<n> keys: <names>)`; never shows a key.
    package var description: String {
        "APIKeyRegistry(\(entries.count) keys: \(entries.map(\.name).joined(separator: ", ")))"
    }
}
