import Foundation

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
    /// The UTF-8 bytes written so far.
    package private(set) var bytes: [UInt8] = []
    package let sortedKeys: Bool
    package let escapeSlashes: Bool

    package init(sortedKeys: Bool, escapeSlashes: Bool) {
        self.sortedKeys = sortedKeys
        self.escapeSlashes = escapeSlashes
        bytes.reserveCapacity(512)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// The text written so far.
    package var text: String { String(decoding: bytes, as: UTF8.self) }

    /// A value `JSONEncoder` would refuse: a double that is not finite.
    package struct NonConformingNumber: Error, CustomStringConvertible {
        package let value: Double
        package var description: String { "cannot write \(value) as JSON (NaN and infinite numbers have no JSON form)" }
    }

    /// JSON punctuation or a literal, as is.
    package mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    package mutating func null() { raw("null") }
    package mutating func bool(_ value: Bool) { value ? raw("true") : raw("false") }
    package mutating func int<I: BinaryInteger>(_ value: I) { bytes.append(contentsOf: String(value).utf8) }

    package mutating func double(_ value: Double) throws(NonConformingNumber) {
        guard value.isFinite else { throw NonConformingNumber(value: value) }
        var written = value.description
        if written.hasSuffix(".0") { written.removeLast(2) }
        bytes.append(contentsOf: written.utf8)
    }

    /// A string literal, quotes included. Only ASCII bytes are ever escaped, so the UTF-8 bytes of
    /// everything else are copied as they are.
    package mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var start = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == 0x22 || byte == 0x5C || (byte == 0x2F && escapeSlashes) else { continue }
                bytes.append(contentsOf: utf8[start..<index])
                start = index + 1
                switch byte {
                case 0x22: raw("\\\"")
                case 0x5C: raw("\\\\")
                case 0x2F: raw("\\/")
                case 0x08: raw("\\b")
                case 0x0C: raw("\\f")
                case 0x0A: raw("\\n")
                case 0x0D: raw("\\r")
                case 0x09: raw("\\t")
                default:
                    raw("\\u00")
                    bytes.append(Self.hexDigits[Int(byte >> 4)])
                    bytes.append(Self.hexDigits[Int(byte & 0xF)])
                }
            }
            bytes.append(contentsOf: utf8[start...])
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// A uuid as a string literal in lower case (`uuidString.lowercased()`), without building either.
    package mutating func uuid(_ value: UUID) {
        bytes.append(UInt8(ascii: "\""))
        withUnsafeBytes(of: value.uuid) { octets in
            for (index, octet) in octets.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { bytes.append(UInt8(ascii: "-")) }
                bytes.append(Self.hexDigits[Int(octet >> 4)])
                bytes.append(Self.hexDigits[Int(octet & 0xF)])
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    package mutating func optional(_ value: String?) {
        if let value { string(value) } else { null() }
    }

    /// `"key":` (the key escaped as any string), after a comma unless `first`.
    package mutating func key(_ key: String, first: Bool = false) {
        if !first { raw(",") }
        string(key)
        raw(":")
    }

    package mutating func value(_ value: JSONValue) throws(NonConformingNumber) {
        switch value {
        case .null: null()
        case .bool(let value): bool(value)
        case .int(let value): int(value)
        case .double(let value): try double(value)
        case .string(let value): string(value)
        case .array(let elements):
            raw("[")
            for (index, element) in elements.enumerated() {
                if index > 0 { raw(",") }
                try self.value(element)
            }
            raw("]")
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
        raw("{")
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
        raw("}")
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
