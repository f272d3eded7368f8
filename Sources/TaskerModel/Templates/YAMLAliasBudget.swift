import TaskerStepModel
import Yams

/// How many nodes a YAML text holds once its aliases are expanded, measured without expanding them
/// and without letting Yams touch an expanded alias.
///
/// Yams composes an alias (`*name`) as the anchored node itself, shared rather than copied, which is
/// cheap; but it then hashes every mapping key to find duplicates, so an alias used as a key is walked
/// in full: nine levels of nine aliases under `? *i` (500 bytes) cost Yams hours of CPU before
/// `TemplateYAML` could count anything. So the text is first composed with every alias replaced by a
/// plain placeholder scalar (`*name` → `__tasker_yaml_alias__name`; a `*` inside a quoted, plain or
/// block scalar or a comment becomes harmless text there too), which keeps the anchors on their nodes.
/// Walking that tree in document order, an alias counts as the expanded size of the node last anchored
/// with its name, as libyaml resolves it. Linear in the text; only a text within the bound is then
/// composed for real.
enum YAMLAliasBudget {
    static let placeholder = "__tasker_yaml_alias__"

    /// Whether the documents of `text` expand (aliases at every use) to more than `limit` nodes.
    /// Throws what Yams throws for a text it cannot compose.
    static func exceeds(_ text: String, limit: Int, resolver: Resolver) throws -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "*")) else { return false }  // no alias: nothing multiplies
        var sequence = try Yams.compose_all(yaml: neutralized(bytes), resolver)
        var counter = Counter(limit: limit)
        while let document = sequence.next() {
            guard counter.add(document) else { return true }
        }
        if let error = sequence.error { throw error }
        return false
    }

    /// `text` with each `*` that starts an alias name (`A-Z a-z 0-9 _ -`, libyaml's anchor characters)
    /// replaced by the placeholder prefix.
    static func neutralized(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        let prefix = Array(placeholder.utf8)
        for (index, byte) in bytes.enumerated() {
            if byte == UInt8(ascii: "*"), index + 1 < bytes.count, isAnchorCharacter(bytes[index + 1]) {
                out += prefix
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func isAnchorCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// Sums expanded sizes over documents, stopping once past the limit.
    private struct Counter {
        let limit: Int
        var total = 0
        /// The expanded size of the node last anchored with each name.
        var anchored: [String: Int] = [:]

        /// Adds `node`'s expanded size; false once the total is past the limit.
        mutating func add(_ node: Node) -> Bool {
            guard let size = size(of: node) else { return false }
            total += size
            return total <= limit
        }

        /// The expanded size of `node` (nil past the limit), anchors registered once a node is complete.
        mutating func size(of node: Node) -> Int? {
            var size = 1
            switch node {
            case .scalar(let scalar):
                if scalar.string.hasPrefix(YAMLAliasBudget.placeholder),
                    let target = anchored[String(scalar.string.dropFirst(YAMLAliasBudget.placeholder.count))]
                {
                    size = target
                }
            case .sequence(let sequence):
                for item in sequence {
                    guard let child = self.size(of: item) else { return nil }
                    size += child
                    if size > limit { return nil }
                }
            case .mapping(let mapping):
                for (key, value) in mapping {
                    guard let keySize = self.size(of: key), let valueSize = self.size(of: value) else { return nil }
                    size += keySize + valueSize
                    if size > limit { return nil }
                }
            case .alias:
                break  // never produced: the text holds no alias any more
            }
            if size > limit { return nil }
            if let anchor = node.anchor { anchored[anchor.rawValue] = size }
            return size
        }
    }
}
