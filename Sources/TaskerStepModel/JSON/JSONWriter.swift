import Foundation
import TaskerText

/// Compact JSON text without Foundation's `JSONEncoder`, byte for byte what `JSONEncoder` writes
/// for the same value (tested against it in `JSONWriterTests` on generated values): strings escaped
/// by `StringEscaping.appendJSONQuoted` (`/` as `\/` unless `escapeSlashes` is off,
/// `.withoutEscapingSlashes`); doubles as Swift's `description` without a trailing `.0` (`1`, `1e-05`,
/// `1.2345678901234568e+17`, `-0`); object members in key order (by UTF-8 bytes) with `sortedKeys`,
/// else in the dictionary's order (`JSONEncoder`'s own order is then arbitrary too). What
/// `JSONEncoder` refuses is refused (`Refusal`): a non-finite double (its default `.throw`), and an
/// array or object nested deeper than the writer's `maxDepth` (a handler's result is not trusted to be
/// shallow: the recursion stays bounded, and the worker stores a `result_not_storable` result instead;
/// a step's result document is held to `UntrustedJSON.maximumValueDepth`, so that whatever is
/// stored can be read back, inside its envelopes, within `UntrustedJSON.maximumDepth`). The
/// worker encodes three small documents per step (the result, the transition metadata, the
/// orchestration message); Foundation's encoder was about 40 % of its instructions.
package struct JSONWriter {
    /// The UTF-8 bytes written so far.
    package private(set) var bytes: [UInt8] = []
    package let sortedKeys: Bool
    package let escapeSlashes: Bool
    /// Arrays and objects open at this point.
    private var depth = 0

    /// The most arrays and objects open at once, the document's own included (e.g. the result's
    /// `{"result": …}`); a value nested deeper is refused.
    let maxDepth: Int

    /// `JSONEncoder`'s limit: an array or object inside 511 others is refused.
    package static let encoderMaxDepth = 511

    package init(sortedKeys: Bool, escapeSlashes: Bool, maxDepth: Int = JSONWriter.encoderMaxDepth) {
        self.sortedKeys = sortedKeys
        self.escapeSlashes = escapeSlashes
        self.maxDepth = maxDepth
        bytes.reserveCapacity(512)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// The text written so far.
    package var text: String { String(decoding: bytes, as: UTF8.self) }

    /// A value `JSONEncoder` would refuse.
    package enum Refusal: Error, CustomStringConvertible, Equatable {
        /// A double that is not finite.
        case nonFiniteNumber(Double)
        /// An array or object nested deeper than the writer's `maxDepth` (`limit`).
        case tooDeep(limit: Int)

        package var description: String {
            switch self {
            case .nonFiniteNumber(let value): "cannot write \(value) as JSON (NaN and infinite numbers have no JSON form)"
            case .tooDeep(let limit): "arrays and objects are nested more than \(limit) levels deep"
            }
        }
    }

    /// JSON punctuation or a literal, as is.
    package mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// `{` or `[` of the documents' own fixed nesting (counted towards `maxDepth`, never refused).
    package mutating func open(_ bracket: StaticString) {
        raw(bracket)
        depth += 1
    }

    /// `}` or `]`.
    package mutating func close(_ bracket: StaticString) {
        raw(bracket)
        depth -= 1
    }

    /// `open` for a value's own array or object: refused past `maxDepth`.
    private mutating func nest(_ bracket: StaticString) throws(Refusal) {
        guard depth < maxDepth else { throw .tooDeep(limit: maxDepth) }
        open(bracket)
    }

    package mutating func null() { raw("null") }
    package mutating func bool(_ value: Bool) { value ? raw("true") : raw("false") }
    package mutating func int<I: BinaryInteger>(_ value: I) { bytes.append(contentsOf: String(value).utf8) }

    package mutating func double(_ value: Double) throws(Refusal) {
        guard value.isFinite else { throw .nonFiniteNumber(value) }
        var written = value.description
        if written.hasSuffix(".0") { written.removeLast(2) }
        bytes.append(contentsOf: written.utf8)
    }

    /// A string literal, quotes included, escaped as `JSONEncoder` does.
    package mutating func string(_ value: String) {
        StringEscaping.appendJSONQuoted(value, to: &bytes, escapeSlashes: escapeSlashes, allControls: false)
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

    /// `"key":` and a string or null.
    package mutating func member(_ key: String, _ value: String?, first: Bool = false) {
        self.key(key, first: first)
        optional(value)
    }

    /// `"key":` and a boolean.
    package mutating func member(_ key: String, _ value: Bool) {
        self.key(key)
        bool(value)
    }

    /// `"key":` and an integer.
    package mutating func member<I: BinaryInteger>(_ key: String, _ value: I) {
        self.key(key)
        int(value)
    }

    /// `"key":` and an object of `members`.
    package mutating func member(_ key: String, _ members: [String: JSONValue]) throws(Refusal) {
        self.key(key)
        try object(members)
    }

    package mutating func value(_ value: JSONValue) throws(Refusal) {
        switch value {
        case .null: null()
        case .bool(let value): bool(value)
        case .int(let value): int(value)
        case .double(let value): try double(value)
        case .string(let value): string(value)
        case .array(let elements):
            try nest("[")
            for (index, element) in elements.enumerated() {
                if index > 0 { raw(",") }
                try self.value(element)
            }
            close("]")
        case .object(let members): try object(members)
        }
    }

    /// An object of `members` (`[String: JSONValue]`, e.g. `custom`, `context`).
    package mutating func object(_ members: [String: JSONValue]) throws(Refusal) {
        try nest("{")
        try object(members) { (writer: inout JSONWriter, member: JSONValue) throws(Refusal) in try writer.value(member) }
    }

    /// An object of string members (`headers`).
    package mutating func object(_ members: [String: String]) {
        open("{")
        object(members) { (writer: inout JSONWriter, member: String) in writer.string(member) }
    }

    /// The members of an object already opened, and its `}`.
    private mutating func object<V, E: Error>(
        _ members: [String: V], _ write: (inout JSONWriter, V) throws(E) -> Void
    ) throws(E) {
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
        close("}")
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
