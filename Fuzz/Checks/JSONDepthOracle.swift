import TaskerModel
import TaskerPostgres
import TaskerStore

/// The nesting depth of JSON, computed independently of the decoders under test (an oracle: no
/// recursion, so any depth is measured): a scalar is 0, a container 1 + its deepest member.
public enum JSONDepthOracle {
    /// The depth of a decoded value.
    public static func depth(of value: JSONValue) -> Int {
        var deepest = 0
        var pending: [(JSONValue, Int)] = [(value, 0)]
        while let (current, level) = pending.popLast() {
            switch current {
            case .array(let items):
                deepest = max(deepest, level + 1)
                pending.append(contentsOf: items.map { ($0, level + 1) })
            case .object(let members):
                deepest = max(deepest, level + 1)
                pending.append(contentsOf: members.values.map { ($0, level + 1) })
            default:
                continue
            }
        }
        return deepest
    }

    /// The deepest bracket nesting of a text outside its strings (equal to `depth(of:)` of the
    /// value when the text is valid JSON).
    public static func depth(ofText bytes: some Sequence<UInt8>) -> Int {
        var level = 0
        var deepest = 0
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                level += 1
                deepest = max(deepest, level)
            case UInt8(ascii: "]"), UInt8(ascii: "}"): level -= 1
            default: continue
            }
        }
        return deepest
    }

    /// The deepest JSON any decoder of untrusted input may accept (`UntrustedJSON.maximumDepth`; the
    /// oracle's count above is independent of `UntrustedJSON`'s scan).
    public static let maximumAcceptedDepth = UntrustedJSON.maximumDepth
}
