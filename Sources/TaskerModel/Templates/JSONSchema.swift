import Foundation
import TaskerStepModel

/// A JSON Schema (draft 2020-12 / draft 7 vocabulary) that a domain event's payload must satisfy
/// (`publishes_events[].schema`). Upstream skips an event whose payload does not validate; so do we.
///
/// Supported keywords: `type` (one or a list; `integer` accepts whole doubles), `enum`, `const`,
/// `properties`, `required`, `additionalProperties` (bool or schema), `patternProperties`,
/// `minProperties`/`maxProperties`, `items` (schema; or a list = tuple form), `prefixItems`,
/// `minItems`/`maxItems`, `uniqueItems`, `minLength`/`maxLength` (in characters), `pattern`,
/// `minimum`/`maximum`/`exclusiveMinimum`/`exclusiveMaximum` (number or draft-4 bool form),
/// `multipleOf`, `allOf`/`anyOf`/`oneOf`/`not`, `if`/`then`/`else`, and the boolean schemas
/// `true`/`false`. Annotation keywords (`title`, `description`, `format`, `$schema`, `$id`,
/// `examples`, `default`) and unknown keywords are ignored, as the specification says; `$ref` is not
/// resolved (it passes) — a template that needs references should inline them.
public struct JSONSchema: Sendable, Equatable {
    public let schema: JSONValue

    public init(_ schema: JSONValue) { self.schema = schema }

    /// One way the value breaks the schema: where (a JSON pointer into the value) and what.
    public struct Violation: Sendable, Equatable, CustomStringConvertible {
        public var path: String
        public var message: String
        public var description: String { "\(path.isEmpty ? "/" : path): \(message)" }
    }

    /// Every violation of the schema by `value` (empty when it validates).
    public func violations(of value: JSONValue) -> [Violation] {
        var found: [Violation] = []
        Self.check(value, against: schema, at: "", into: &found)
        return found
    }

    /// True when `value` satisfies the schema.
    public func validates(_ value: JSONValue) -> Bool { violations(of: value).isEmpty }

    /// Problems of the schema itself, found when a template is loaded (so that no event is dropped
    /// at run time because of a broken schema): not an object or boolean, or a `pattern` /
    /// `patternProperties` key that is not a valid regular expression. Each names its JSON pointer.
    public static func problems(in schema: JSONValue) -> [String] {
        var found: [String] = []
        collectProblems(schema, at: "", into: &found)
        return found
    }

    private static func collectProblems(_ schema: JSONValue, at path: String, into found: inout [String]) {
        switch schema {
        case .bool: return
        case .object(let keywords):
            if let pattern = keywords["pattern"] {
                if pattern.stringValue.flatMap({ try? NSRegularExpression(pattern: $0) }) == nil {
                    found.append("\(path)/pattern: not a valid regular expression")
                }
            }
            if case .object(let patterns) = keywords["patternProperties"] {
                for (pattern, subschema) in patterns.sorted(by: { $0.key < $1.key }) {
                    let here = "\(path)/patternProperties/\(escapePointer(pattern))"
                    if (try? NSRegularExpression(pattern: pattern)) == nil {
                        found.append("\(here): not a valid regular expression")
                    }
                    collectProblems(subschema, at: here, into: &found)
                }
            }
            for key in ["properties", "definitions", "$defs", "dependentSchemas"] {
                if case .object(let members) = keywords[key] {
                    for (name, subschema) in members.sorted(by: { $0.key < $1.key }) {
                        collectProblems(subschema, at: "\(path)/\(key)/\(escapePointer(name))", into: &found)
                    }
                }
            }
            for key in ["items", "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains"] {
                switch keywords[key] {
                case .array(let list)?:
                    for (index, subschema) in list.enumerated() { collectProblems(subschema, at: "\(path)/\(key)/\(index)", into: &found) }
                case let subschema?:
                    collectProblems(subschema, at: "\(path)/\(key)", into: &found)
                case nil:
                    break
                }
            }
            for key in ["allOf", "anyOf", "oneOf", "prefixItems"] {
                if case .array(let list) = keywords[key] {
                    for (index, subschema) in list.enumerated() { collectProblems(subschema, at: "\(path)/\(key)/\(index)", into: &found) }
                }
            }
        default:
            found.append("\(path.isEmpty ? "/" : path): a schema must be a JSON object or a boolean")
        }
    }

    // MARK: - Keywords

    private static func check(_ value: JSONValue, against schema: JSONValue, at path: String, into found: inout [Violation]) {
        switch schema {
        case .bool(true): return
        case .bool(false):
            found.append(Violation(path: path, message: "no value is allowed here (schema `false`)"))
            return
        case .object(let keywords):
            checkType(value, keywords["type"], at: path, into: &found)
            checkValueKeywords(value, keywords, at: path, into: &found)
            switch value {
            case .object(let members): checkObject(members, keywords, at: path, into: &found)
            case .array(let elements): checkArray(elements, keywords, at: path, into: &found)
            case .string(let string): checkString(string, keywords, at: path, into: &found)
            case .int, .double: checkNumber(value.doubleValue ?? 0, keywords, at: path, into: &found)
            case .null, .bool: break
            }
            checkCombinators(value, keywords, at: path, into: &found)
        default:
            found.append(Violation(path: path, message: "the schema itself is not an object or a boolean"))
        }
    }

    private static func typeName(of value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool: return "boolean"
        case .int: return "integer"
        case .double(let d): return d.rounded() == d && d.isFinite ? "integer" : "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    private static func checkType(_ value: JSONValue, _ type: JSONValue?, at path: String, into found: inout [Violation]) {
        let allowed: [String]
        switch type {
        case .string(let name): allowed = [name]
        case .array(let names): allowed = names.compactMap(\.stringValue)
        default: return
        }
        let actual = typeName(of: value)
        let matches = allowed.contains(actual) || (actual == "integer" && allowed.contains("number"))
        if !matches {
            found.append(Violation(path: path, message: "expected type \(allowed.joined(separator: " or ")), found \(actual)"))
        }
    }

    private static func checkValueKeywords(
        _ value: JSONValue, _ keywords: [String: JSONValue], at path: String,
        into found: inout [Violation]
    ) {
        if case .array(let options) = keywords["enum"], !options.contains(where: { equal($0, value) }) {
            found.append(Violation(path: path, message: "value is not one of the allowed values (enum)"))
        }
        if let constant = keywords["const"], !equal(constant, value) {
            found.append(Violation(path: path, message: "value does not equal the required constant (const)"))
        }
    }

    private static func checkObject(
        _ members: [String: JSONValue], _ keywords: [String: JSONValue], at path: String,
        into found: inout [Violation]
    ) {
        if case .array(let required) = keywords["required"] {
            for case .string(let name) in required where members[name] == nil {
                found.append(Violation(path: path, message: "missing required property `\(name)`"))
            }
        }
        let properties: [String: JSONValue]
        if case .object(let declared) = keywords["properties"] { properties = declared } else { properties = [:] }
        var patterns: [(NSRegularExpression, JSONValue)] = []
        if case .object(let declared) = keywords["patternProperties"] {
            for (pattern, schema) in declared {
                if let regex = try? NSRegularExpression(pattern: pattern) { patterns.append((regex, schema)) }
            }
        }
        for (name, member) in members.sorted(by: { $0.key < $1.key }) {
            let memberPath = path + "/" + escapePointer(name)
            var covered = false
            if let schema = properties[name] {
                covered = true
                check(member, against: schema, at: memberPath, into: &found)
            }
            for (regex, schema) in patterns where matches(regex, name) {
                covered = true
                check(member, against: schema, at: memberPath, into: &found)
            }
            if !covered, let additional = keywords["additionalProperties"] {
                if additional == .bool(false) {
                    found.append(Violation(path: memberPath, message: "property `\(name)` is not allowed (additionalProperties)"))
                } else {
                    check(member, against: additional, at: memberPath, into: &found)
                }
            }
        }
        if let minimum = keywords["minProperties"]?.intValue, members.count < minimum {
            found.append(Violation(path: path, message: "has \(members.count) properties, fewer than minProperties \(minimum)"))
        }
        if let maximum = keywords["maxProperties"]?.intValue, members.count > maximum {
            found.append(Violation(path: path, message: "has \(members.count) properties, more than maxProperties \(maximum)"))
        }
    }

    private static func checkArray(
        _ elements: [JSONValue], _ keywords: [String: JSONValue], at path: String,
        into found: inout [Violation]
    ) {
        var prefix: [JSONValue] = []
        if case .array(let schemas) = keywords["prefixItems"] { prefix = schemas }
        if case .array(let schemas) = keywords["items"] { prefix = schemas }  // draft-7 tuple form
        for (index, element) in elements.enumerated() {
            let elementPath = "\(path)/\(index)"
            if index < prefix.count {
                check(element, against: prefix[index], at: elementPath, into: &found)
            } else if let items = keywords["items"], !isArray(items) {
                check(element, against: items, at: elementPath, into: &found)
            } else if let additional = keywords["additionalItems"], isArray(keywords["items"]) {
                check(element, against: additional, at: elementPath, into: &found)
            }
        }
        if let minimum = keywords["minItems"]?.intValue, elements.count < minimum {
            found.append(Violation(path: path, message: "has \(elements.count) items, fewer than minItems \(minimum)"))
        }
        if let maximum = keywords["maxItems"]?.intValue, elements.count > maximum {
            found.append(Violation(path: path, message: "has \(elements.count) items, more than maxItems \(maximum)"))
        }
        if keywords["uniqueItems"] == .bool(true) {
            for i in elements.indices {
                for j in elements.indices where j > i && equal(elements[i], elements[j]) {
                    found.append(Violation(path: path, message: "items \(i) and \(j) are equal (uniqueItems)"))
                }
            }
        }
    }

    private static func checkString(
        _ string: String, _ keywords: [String: JSONValue], at path: String,
        into found: inout [Violation]
    ) {
        if let minimum = keywords["minLength"]?.intValue, string.count < minimum {
            found.append(Violation(path: path, message: "string is shorter than minLength \(minimum)"))
        }
        if let maximum = keywords["maxLength"]?.intValue, string.count > maximum {
            found.append(Violation(path: path, message: "string is longer than maxLength \(maximum)"))
        }
        if let pattern = keywords["pattern"]?.stringValue {
            if let regex = try? NSRegularExpression(pattern: pattern) {
                if !matches(regex, string) {
                    found.append(Violation(path: path, message: "string does not match pattern `\(pattern)`"))
                }
            } else {
                found.append(Violation(path: path, message: "the schema's pattern `\(pattern)` is not a valid regular expression"))
            }
        }
    }

    private static func checkNumber(
        _ number: Double, _ keywords: [String: JSONValue], at path: String,
        into found: inout [Violation]
    ) {
        let exclusiveMinimumFlag = keywords["exclusiveMinimum"] == .bool(true)
        let exclusiveMaximumFlag = keywords["exclusiveMaximum"] == .bool(true)
        if let minimum = keywords["minimum"]?.doubleValue,
            exclusiveMinimumFlag ? number <= minimum : number < minimum
        {
            found.append(Violation(path: path, message: "\(format(number)) is below the minimum \(format(minimum))"))
        }
        if let maximum = keywords["maximum"]?.doubleValue,
            exclusiveMaximumFlag ? number >= maximum : number > maximum
        {
            found.append(Violation(path: path, message: "\(format(number)) is above the maximum \(format(maximum))"))
        }
        if let bound = keywords["exclusiveMinimum"]?.doubleValue, number <= bound {
            found.append(Violation(path: path, message: "\(format(number)) is not above the exclusiveMinimum \(format(bound))"))
        }
        if let bound = keywords["exclusiveMaximum"]?.doubleValue, number >= bound {
            found.append(Violation(path: path, message: "\(format(number)) is not below the exclusiveMaximum \(format(bound))"))
        }
        if let divisor = keywords["multipleOf"]?.doubleValue, divisor > 0 {
            let quotient = number / divisor
            if abs(quotient - quotient.rounded()) > 1e-9 {
                found.append(Violation(path: path, message: "\(format(number)) is not a multiple of \(format(divisor))"))
            }
        }
    }

    private static func checkCombinators(
        _ value: JSONValue, _ keywords: [String: JSONValue], at path: String,
        into found: inout [Violation]
    ) {
        if case .array(let schemas) = keywords["allOf"] {
            for schema in schemas { check(value, against: schema, at: path, into: &found) }
        }
        if case .array(let schemas) = keywords["anyOf"], !schemas.contains(where: { passes(value, $0) }) {
            found.append(Violation(path: path, message: "value matches none of the anyOf schemas"))
        }
        if case .array(let schemas) = keywords["oneOf"] {
            let matching = schemas.filter { passes(value, $0) }.count
            if matching != 1 {
                found.append(Violation(path: path, message: "value matches \(matching) of the oneOf schemas, not exactly one"))
            }
        }
        if let negated = keywords["not"], passes(value, negated) {
            found.append(Violation(path: path, message: "value matches the schema under `not`"))
        }
        if let condition = keywords["if"] {
            let branch = passes(value, condition) ? keywords["then"] : keywords["else"]
            if let branch { check(value, against: branch, at: path, into: &found) }
        }
    }

    // MARK: - Helpers

    private static func passes(_ value: JSONValue, _ schema: JSONValue) -> Bool {
        var found: [Violation] = []
        check(value, against: schema, at: "", into: &found)
        return found.isEmpty
    }

    /// JSON equality where 1 and 1.0 are the same number.
    private static func equal(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.int, .double), (.double, .int): return a.doubleValue == b.doubleValue
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { equal(value, $0) } ?? false }
        default: return a == b
        }
    }

    private static func isArray(_ value: JSONValue?) -> Bool {
        if case .array = value { return true }
        return false
    }

    private static func matches(_ regex: NSRegularExpression, _ string: String) -> Bool {
        regex.firstMatch(in: string, range: NSRange(string.startIndex..., in: string)) != nil
    }

    private static func escapePointer(_ name: String) -> String {
        name.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    private static func format(_ number: Double) -> String {
        number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }
}
