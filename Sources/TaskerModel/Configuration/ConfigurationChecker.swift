import Foundation
import TaskerAMQP
import TaskerStepModel
import TaskerText

/// Schema conformance (per file) and rule validation (on the merged tree).
enum ConfigurationChecker {
    // MARK: - Per file: unknown keys, types, enumerations

    /// Keeps the keys of `tree` that the schema knows, with the schema's types. Unknown keys become
    /// warnings; wrong types become errors (and are dropped). Integers written for floating-point keys
    /// are converted. Runs before `${...}` expansion, so nothing in ignored keys is expanded.
    static func conform(
        _ tree: ConfigValue, file: String,
        errors: inout [ConfigurationIssue], warnings: inout [ConfigurationIssue]
    ) -> ConfigValue {
        conform(tree, schema: ConfigurationSchema.defaults, path: "", file: file, errors: &errors, warnings: &warnings)
            ?? .table([:])
    }

    private static func conform(
        _ value: ConfigValue, schema: ConfigValue, path: String, file: String,
        errors: inout [ConfigurationIssue], warnings: inout [ConfigurationIssue]
    ) -> ConfigValue? {
        func typeError() -> ConfigValue? {
            errors.append(
                ConfigurationIssue(
                    file: file, keyPath: path.isEmpty ? nil : path,
                    value: Redaction.redact(value, keyPath: path).rendered,
                    problem: "wrong type: expected \(schema.typeName), found \(value.typeName)"))
            return nil
        }
        switch (schema, value) {
        case (.table(let known), .table(let given)):
            var out: [String: ConfigValue] = [:]
            for key in given.keys.sorted() {
                if ConfigurationSchema.isSilentlyIgnored(key: key, parentPath: path) { continue }
                var name = key
                if let current = ConfigurationSchema.aliases[path]?[key] {
                    name = current
                    warnings.append(
                        ConfigurationIssue(
                            file: file, keyPath: join(path, key), value: nil,
                            problem: "deprecated key name, read as '\(join(path, current))'"))
                }
                let child = join(path, name)
                guard let childSchema = known[name] else {
                    var problem = "unknown key (ignored)"
                    if let suggestion = closestKey(to: name, among: Array(known.keys)) {
                        problem += "; did you mean '\(suggestion)'?"
                    }
                    warnings.append(ConfigurationIssue(file: file, keyPath: child, value: nil, problem: problem))
                    continue
                }
                if let conformed = conform(
                    given[key]!, schema: childSchema, path: child, file: file, errors: &errors, warnings: &warnings)
                {
                    out[name] = conformed
                }
            }
            return .table(out)
        case (.integer, .integer), (.boolean, .boolean), (.float, .float), (.string, .string):
            return value
        case (.float, .integer(let i)):
            return .float(Double(i))
        case (.array(let defaults), .array(let items)):
            guard let element = defaults.first ?? ConfigurationSchema.arrayElements[path] else { return value }
            var out: [ConfigValue] = []
            for (index, item) in items.enumerated() {
                guard
                    let conformed = conform(
                        item, schema: element, path: "\(path)[\(index)]", file: file, errors: &errors, warnings: &warnings)
                else { continue }
                // Array-of-table entries are completed from the entry defaults.
                out.append(element.tableValue == nil ? conformed : element.merged(with: conformed))
            }
            return .array(out)
        default:
            return typeError()
        }
    }

    static func join(_ path: String, _ key: String) -> String {
        path.isEmpty ? key : path + "." + key
    }

    /// The known key closest to a misspelt one, when it is close enough to be a likely typo.
    static func closestKey(to key: String, among candidates: [String]) -> String? {
        let scored = candidates.map { ($0, editDistance(key, $0)) }.filter { $0.1 <= max(2, key.count / 4) }
        return scored.min { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }?.0
    }

    private static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    // MARK: - Merged tree: ranges and formats

    /// Checks every rule of `ConfigurationSchema.rules` against the merged tree. `source` names the file a
    /// key path's value came from; paths in `skipping` already have an error and are not re-checked.
    static func validate(
        _ merged: ConfigValue, source: (String) -> String?, skipping: Set<String>
    ) -> [ConfigurationIssue] {
        var issues: [ConfigurationIssue] = []
        for (pattern, rule) in ConfigurationSchema.rules {
            for (path, value) in values(matching: pattern, in: merged) where !skipping.contains(path) {
                if let problem = check(value, against: rule) {
                    issues.append(
                        ConfigurationIssue(
                            file: source(path), keyPath: path,
                            value: Redaction.redact(value, keyPath: path).rendered, problem: problem))
                }
            }
        }
        return issues
    }

    /// The values at a rule path, where `[]` expands to every array element (`a.b[0].c`, `a.b[1].c`, ...).
    static func values(matching pattern: String, in tree: ConfigValue) -> [(String, ConfigValue)] {
        var tokens: [String] = []
        for part in pattern.split(separator: ".") {
            if part.hasSuffix("[]") {
                tokens.append(String(part.dropLast(2)))
                tokens.append("[]")
            } else {
                tokens.append(String(part))
            }
        }
        var results: [(String, ConfigValue)] = []
        func walk(_ value: ConfigValue, _ rest: ArraySlice<String>, _ path: String) {
            guard let token = rest.first else {
                results.append((path, value))
                return
            }
            if token == "[]" {
                guard case .array(let items) = value else { return }
                for (index, item) in items.enumerated() { walk(item, rest.dropFirst(), "\(path)[\(index)]") }
            } else if let child = value.tableValue?[token] {
                walk(child, rest.dropFirst(), join(path, token))
            }
        }
        walk(tree, tokens[...], "")
        return results
    }

    /// The problem with `value` under `rule`, or `nil` when it is fine.
    static func check(_ value: ConfigValue, against rule: ConfigurationSchema.Rule) -> String? {
        switch (rule, value) {
        case (.integer(let range), .integer(let i)):
            guard !range.contains(i) else { return nil }
            return range.upperBound == Int.max
                ? "must be at least \(range.lowerBound)" : "must be between \(range.lowerBound) and \(range.upperBound)"
        case (.number(let range), .float(let d)):
            guard !range.contains(d) else { return nil }
            return "must be between \(ConfigValue.renderFloat(range.lowerBound)) and \(ConfigValue.renderFloat(range.upperBound))"
        case (.nonEmpty, .string(let s)):
            return s.allSatisfy(\.isWhitespace) ? "must not be empty" : nil
        case (.oneOf(let allowed), .string(let s)):
            return allowed.contains(s) ? nil : "must be one of: " + allowed.joined(separator: ", ")
        case (.postgresURL(let allowEmpty), .string(let s)):
            if allowEmpty && s.isEmpty { return nil }
            return hasURLScheme(s, in: ["postgres", "postgresql"])
                ? nil : "must be a postgres:// or postgresql:// URL" + (allowEmpty ? " or empty" : "")
        case (.urlScheme(let schemes), .string(let s)):
            return hasURLScheme(s, in: schemes)
                ? nil : "must be a URL starting with " + schemes.map { $0 + "://" }.joined(separator: " or ")
        case (.amqpURL, .string(let s)):
            guard hasURLScheme(s, in: ["amqp"]) else {
                return hasURLScheme(s, in: ["amqps"]) ? nil : "must be a URL starting with amqp:// or amqps://"
            }
            do {
                _ = try AMQPConfiguration(url: s)
                return nil
            } catch {
                return error.reason  // names what is wrong, never the URL (it holds a password)
            }
        case (.bindAddress, .string(let s)):
            return BindAddress.isValid(s) ? nil : "must be host:port with a port from 0 to 65535"
        case (.containsAll(let parts), .string(let s)):
            return parts.allSatisfy(s.contains) ? nil : "must contain " + parts.joined(separator: " and ")
        case (.count(let range), .array(let items)):
            guard !range.contains(items.count) else { return nil }
            return range.upperBound == Int.max
                ? "must have at least \(range.lowerBound) \(range.lowerBound == 1 ? "entry" : "entries")"
                : "must have between \(range.lowerBound) and \(range.upperBound) entries"
        default:
            return nil  // wrong type: already reported while reading the file
        }
    }

    static func hasURLScheme(_ s: String, in schemes: [String]) -> Bool {
        guard let separator = s.range(of: "://") else { return false }
        let scheme = s[..<separator.lowerBound].lowercased()
        let rest = s[separator.upperBound...]
        return schemes.contains(scheme) && !rest.isEmpty && !rest.contains(where: \.isWhitespace)
    }
}
