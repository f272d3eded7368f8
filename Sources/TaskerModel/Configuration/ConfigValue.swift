import Foundation
import TOMLKit
import TaskerStepModel
import TaskerText

/// A parsed TOML value as a plain, `Sendable` Swift tree.
///
/// TOMLKit's `TOMLTable` wraps a C++ object and is neither `Sendable` nor convenient to merge or walk,
/// so the loader converts every file into this tree right after parsing, does all of its work
/// (substitution, schema checks, merging, validation, redaction) on it, and converts back to a
/// `TOMLTable` only to hand the result to `TOMLDecoder`.
enum ConfigValue: Sendable, Equatable {
    case string(String)
    case integer(Int)
    case float(Double)
    case boolean(Bool)
    case array([ConfigValue])
    case table([String: ConfigValue])
    /// Dates and times: kept as their TOML text; no configuration key uses them.
    case other(String)

    /// A short name of the value's type, for error messages ("an integer", "a string", ...).
    var typeName: String {
        switch self {
        case .string: "a string"
        case .integer: "an integer"
        case .float: "a floating-point number"
        case .boolean: "a boolean"
        case .array: "an array"
        case .table: "a table"
        case .other: "a date/time"
        }
    }

    /// The value written the way it would appear in a TOML file (tables abbreviated).
    var rendered: String {
        switch self {
        case .string(let s): return StringEscaping.jsonQuoted(s)
        case .integer(let i): return String(i)
        case .float(let d): return ConfigValue.renderFloat(d)
        case .boolean(let b): return b ? "true" : "false"
        case .array(let items): return "[" + items.map(\.rendered).joined(separator: ", ") + "]"
        case .table(let t): return "{" + t.keys.sorted().map { "\($0) = \(t[$0]!.rendered)" }.joined(separator: ", ") + "}"
        case .other(let s): return s
        }
    }

    static func renderFloat(_ d: Double) -> String {
        if d.isNaN { return "nan" }
        if d.isInfinite { return d < 0 ? "-inf" : "inf" }
        if d == d.rounded(), abs(d) < 1e15 { return String(format: "%.1f", d) }
        return String(d)
    }

    /// The table's entries, or `nil` when this is not a table.
    var tableValue: [String: ConfigValue]? {
        if case .table(let t) = self { return t }
        return nil
    }

    /// Looks a dotted key path up (`"worker.web.enabled"`); no array indexing.
    func value(atPath path: String) -> ConfigValue? {
        var current: ConfigValue = self
        for part in path.split(separator: ".") {
            guard let next = current.tableValue?[String(part)] else { return nil }
            current = next
        }
        return current
    }

    /// Returns `overlay` merged over `self`: tables merge key by key, anything else is replaced.
    func merged(with overlay: ConfigValue) -> ConfigValue {
        guard case .table(var base) = self, case .table(let top) = overlay else { return overlay }
        for (key, value) in top {
            base[key] = base[key].map { $0.merged(with: value) } ?? value
        }
        return .table(base)
    }

    /// Calls `body` with the dotted path of every non-table value (arrays count as leaves).
    func forEachLeaf(prefix: String = "", _ body: (String, ConfigValue) -> Void) {
        guard case .table(let t) = self else {
            body(prefix, self)
            return
        }
        for key in t.keys.sorted() {
            t[key]!.forEachLeaf(prefix: prefix.isEmpty ? key : prefix + "." + key, body)
        }
    }

    /// Applies `transform` to every table key, recursively (also inside arrays of tables).
    func mappingKeys(_ transform: (String) -> String) -> ConfigValue {
        switch self {
        case .table(let t):
            var out: [String: ConfigValue] = [:]
            for (k, v) in t { out[transform(k)] = v.mappingKeys(transform) }
            return .table(out)
        case .array(let items):
            return .array(items.map { $0.mappingKeys(transform) })
        default:
            return self
        }
    }
}

// MARK: - Key spelling

/// TOML keys are snake_case, Swift properties camelCase; the two spellings map one to one.
enum KeySpelling {
    /// `max_concurrent_handlers` → `maxConcurrentHandlers`.
    static func camelCase(_ key: String) -> String {
        let parts = key.split(separator: "_", omittingEmptySubsequences: false)
        guard let first = parts.first else { return key }
        return String(first) + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    /// `maxConcurrentHandlers` → `max_concurrent_handlers`.
    static func snakeCase(_ key: String) -> String {
        var out = ""
        for ch in key {
            if ch.isUppercase {
                out += "_" + ch.lowercased()
            } else {
                out.append(ch)
            }
        }
        return out
    }
}

// MARK: - TOMLKit bridging

extension ConfigValue {
    /// Parses TOML text. Throws `TOMLPreflight.Problem` for the input TOMLKit would crash on, else
    /// TOMLKit's `TOMLParseError` on malformed input.
    package static func parse(toml text: String) throws -> ConfigValue {
        if let problem = TOMLPreflight.check(text) { throw problem }
        return ConfigValue(tomlTable: try TOMLTable(string: text))
    }

    init(tomlTable table: TOMLTable) {
        var out: [String: ConfigValue] = [:]
        for (key, value) in table {
            out[key] = ConfigValue(tomlValue: value.tomlValue)
        }
        self = .table(out)
    }

    init(tomlValue value: TOMLValue) {
        switch value.type {
        case .string: self = .string(value.string ?? "")
        case .int: self = .integer(value.int ?? 0)
        case .double: self = .float(value.double ?? 0)
        case .bool: self = .boolean(value.bool ?? false)
        case .table: self = value.table.map(ConfigValue.init(tomlTable:)) ?? .table([:])
        case .array:
            var items: [ConfigValue] = []
            if let array = value.array {
                for element in array { items.append(ConfigValue(tomlValue: element.tomlValue)) }
            }
            self = .array(items)
        case .date, .time, .dateTime: self = .other(value.debugDescription)
        }
    }

    /// Builds a TOMLKit value; only meaningful for tables at the top level.
    func tomlTable() -> TOMLTable {
        let table = TOMLTable()
        if case .table(let t) = self {
            for key in t.keys.sorted() {
                if let converted = t[key]!.tomlConvertible() { table[key] = converted }
            }
        }
        return table
    }

    private func tomlConvertible() -> (any TOMLValueConvertible)? {
        switch self {
        case .string(let s): return s
        case .integer(let i): return TOMLInt(i)
        case .float(let d): return d
        case .boolean(let b): return b
        case .table: return tomlTable()
        case .array(let items): return TOMLArray(items.compactMap { $0.tomlConvertible() })
        case .other: return nil
        }
    }

    /// Encodes any `Encodable` value with `TOMLEncoder` and returns it as a tree with snake_case keys.
    static func encoding<T: Encodable>(_ value: T) throws -> ConfigValue {
        let table: TOMLTable = try TOMLEncoder().encode(value)
        return ConfigValue(tomlTable: table).mappingKeys(KeySpelling.snakeCase)
    }

    /// Decodes a snake_case tree into `T` with `TOMLDecoder`.
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try TOMLDecoder().decode(type, from: mappingKeys(KeySpelling.camelCase).tomlTable())
    }

    /// Renders a table as TOML text (sections sorted by key).
    func renderTOML() -> String {
        tomlTable().convert(to: .toml, options: [.allowMultilineStrings, .relaxedFloatPrecision])
    }
}
