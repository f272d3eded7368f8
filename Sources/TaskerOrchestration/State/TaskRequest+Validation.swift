import TaskerModel

/// What a task request may hold, checked before anything reads the database: every string against its
/// column (`migrations/0002_schema.sql`), no NUL character anywhere (PostgreSQL's `text` and `jsonb`
/// cannot store it: `jsonb` refuses `\u0000`, and libpq ends a text parameter at it, so `"a\u0000b"`
/// would be stored as `"a"`), and the priority in upstream's range (`TaskRequest`'s
/// `#[validate(range(min = -100, max = 100))]`).
extension TaskRequest {
    /// The most characters of each string field: its column's `character varying(n)`.
    static let columnCharacters = [
        "namespace": 64, "name": 64, "version": 16, "initiator": 128, "source_system": 128, "reason": 128,
    ]
    /// The most characters of `idempotency_key` (hashed into `identity_hash`: the bound is ours).
    static let maxIdempotencyKeyCharacters = 255
    /// Upstream's accepted priorities.
    static let priorities = -100...100

    /// Throws ``OrchestrationError/invalidTaskRequest(_:)`` naming the first field that is wrong and how.
    /// Linear in the size of the request (the context is walked with an explicit stack).
    public func validate() throws(OrchestrationError) {
        let fields = [
            ("namespace", namespace), ("name", name), ("version", version), ("initiator", initiator),
            ("source_system", sourceSystem), ("reason", reason),
        ]
        for (field, value) in fields {
            try Self.check(value, field: field, limit: Self.columnCharacters[field] ?? 0)
        }
        if let idempotencyKey {
            try Self.check(idempotencyKey, field: "idempotency_key", limit: Self.maxIdempotencyKeyCharacters)
        }
        for (index, tag) in tags.enumerated() where tag.utf8.contains(0) {
            throw OrchestrationError.invalidTaskRequest(
                "field \"tags[\(index)]\" contains a NUL character (\\u0000), which PostgreSQL cannot store")
        }
        guard Self.priorities.contains(priority) else {
            throw OrchestrationError.invalidTaskRequest(
                "field \"priority\" is \(priority), outside the accepted range \(Self.priorities.lowerBound)...\(Self.priorities.upperBound)"
            )
        }
        if let path = Self.pathOfNUL(in: context) {
            throw OrchestrationError.invalidTaskRequest(
                "field \"context\(path)\" contains a NUL character (\\u0000), which PostgreSQL's jsonb cannot store")
        }
    }

    private static func check(_ value: String, field: String, limit: Int) throws(OrchestrationError) {
        if value.utf8.contains(0) {
            throw OrchestrationError.invalidTaskRequest(
                "field \"\(field)\" contains a NUL character (\\u0000), which PostgreSQL cannot store")
        }
        // Characters as PostgreSQL counts them (code points, not grapheme clusters).
        let scalars = value.unicodeScalars
        if scalars.count > limit {
            throw OrchestrationError.invalidTaskRequest(
                "field \"\(field)\" is longer than its column allows: \(scalars.count) characters, at most \(limit)")
        }
    }

    /// The path (`.key`, `[index]`, keys with other characters quoted) of a string or key holding a
    /// NUL (with several, any one of them), or nil. Iterative: a stack of values with their parent's path node, the path
    /// text built only for the value found, so the walk is linear in the document whatever its depth.
    static func pathOfNUL(in document: JSONValue) -> String? {
        var nodes: [(parent: Int, component: String)] = [(-1, "")]
        var stack: [(value: JSONValue, node: Int)] = [(document, 0)]
        func path(_ node: Int, then last: String? = nil) -> String {
            var components: [String] = last.map { [$0] } ?? []
            var index = node
            while index > 0 {
                components.append(nodes[index].component)
                index = nodes[index].parent
            }
            return components.reversed().joined()
        }
        while let (value, node) = stack.popLast() {
            switch value {
            case .string(let text) where text.utf8.contains(0):
                return path(node)
            case .array(let elements):
                for (index, element) in elements.enumerated().reversed() {
                    nodes.append((node, "[\(index)]"))
                    stack.append((element, nodes.count - 1))
                }
            case .object(let members):
                for (key, member) in members {
                    let component = Self.component(key)
                    if key.utf8.contains(0) { return path(node, then: component) }
                    nodes.append((node, component))
                    stack.append((member, nodes.count - 1))
                }
            default:
                break
            }
        }
        return nil
    }

    /// `.key` for a plain key; else `[" … "]` with the key escaped (at most 64 characters of it).
    private static func component(_ key: String) -> String {
        let plain =
            !key.isEmpty
            && key.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }
        return plain ? ".\(key)" : "[\(String(key.prefix(64)).debugDescription)]"
    }
}
