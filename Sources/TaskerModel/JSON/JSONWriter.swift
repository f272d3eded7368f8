/// Compact JSON text without Foundation's `JSONEncoder`, byte for byte what `JSONEncoder` writes
/// for the same value (tested against it in `JSONWriterTests` on generated values): strings with
/// `"`, `\`, `\b`, `\f`, `\n`, `\r`, `\t` and other C0 controls as `\u00xx` (lower-case hex), `/`
/// as `\/` unless `escapeSlashes` is off (`.withoutEscapingSlashes`), everything else as is;
/// doubles as Swift's `description` without a trailing `.0` (`1`, `1e-05`, `1.2345678901234568e+17`,
/// `-0`), non-finite ones refused (`JSONEncoder`'s default `.throw`); object members in key order
/// (by UTF-8 bytes) with `sortedKeys`, else in the dictionary's order (`JSONEncoder`'s own order is then
/// arbitrary too). The worker encodes three small documents per step (the result, the transition
/// metadata, the orchestration message); Foundation's encoder was about 40 % of its instructions.
package struct JSONWriter {
    /// The text written so far.
    package var text = ""
    package let sortedKeys: Bool
    package let escapeSlashes: Bool

    package init(sortedKeys: Bool, escapeSlashes: Bool) {
        self.sortedKeys = sortedKeys
        self.escapeSlashes = escapeSlashes
        text.reserveCapacity(256)
    }

    /// A value `JSONEncoder` would refuse: a double that is not finite.
    package struct NonConformingNumber: Error, CustomStringConvertible {
        package let value: Double
        package var description: String { "cannot write \(value) as JSON (not a finite number)" }
    }

    package mutating func null() { text += "null" }
    package mutating func bool(_ value: Bool) { text += value ? "true" : "false" }
    package mutating func int<I: BinaryInteger>(_ value: I) { text += String(value) }

    package mutating func double(_ value: Double) throws(NonConformingNumber) {
        guard value.isFinite else { throw NonConformingNumber(value: value) }
        var written = value.description
        if written.hasSuffix(".0") { written.removeLast(2) }
        text += written
    }

    /// A string literal, quotes included.
    package mutating func string(_ value: String) {
        text += "\""
        if value.utf8.contains(where: needsEscape) {
            text += StringEscaping.escaped(
                value, quoting: true, isControl: { $0.value < 0x20 || ($0 == "/" && escapeSlashes) },
                control: Self.escape)
        } else {
            text += value
        }
        text += "\""
    }

    private func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || (escapeSlashes && byte == UInt8(ascii: "/"))
    }

    private static func escape(_ scalar: Unicode.Scalar) -> String {
        switch scalar.value {
        case 0x08: return "\\b"
        case 0x0C: return "\\f"
        case 0x2F: return "\\/"
        default:
            let hex = String(scalar.value, radix: 16)
            return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
    }

    package mutating func optional(_ value: String?) {
        if let value { string(value) } else { null() }
    }

    /// `"key":` (the key escaped as any string), after a comma unless `first`.
    package mutating func key(_ key: String, first: Bool = false) {
        if !first { text += "," }
        string(key)
        text += ":"
    }

    package mutating func value(_ value: JSONValue) throws(NonConformingNumber) {
        switch value {
        case .null: null()
        case .bool(let value): bool(value)
        case .int(let value): int(value)
        case .double(let value): try double(value)
        case .string(let value): string(value)
        case .array(let elements):
            text += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { text += "," }
                try self.value(element)
            }
            text += "]"
        case .object(let members): try object(members)
        }
    }

    /// An object of `members` (`[String: JSONValue]`, e.g. `custom`, `context`).
    package mutating func object(_ members: [String: JSONValue]) throws(NonConformingNumber) {
        try object(members) { (writer: inout JSONWriter, member: JSONValue) throws(NonConformingNumber) in try writer.value(member) }
    }

    /// An object of string members (`headers`).
    package mutating func object(_ members: [String: String]) {
        object(members) { (writer: inout JSONWriter, member: String) in writer.string(member) }
    }

    private mutating func object<V, E: Error>(
        _ members: [String: V], _ write: (inout JSONWriter, V) throws(E) -> Void
    ) throws(E) {
        text += "{"
        var first = true
        if sortedKeys && members.count > 1 {
            // `JSONEncoder` orders keys by their Unicode scalars (UTF-8 bytes), not by `String`'s
            // `<` (which compares canonically equivalent forms: "a\u{301}" after "\u{A0}").
            for (key, member) in members.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                self.key(key, first: first)
                first = false
                try write(&self, member)
            }
        } else {
            for (key, member) in members {
                self.key(key, first: first)
                first = false
                try write(&self, member)
            }
        }
        text += "}"
    }
}

extension JSONValue {
    /// Compact JSON text as `JSONEncoder()` writes it (object members in the dictionary's order),
    /// without Foundation (`JSONWriter`).
    public func jsonString() throws -> String {
        var writer = JSONWriter(sortedKeys: false, escapeSlashes: true)
        try writer.value(self)
        return writer.text
    }
}
