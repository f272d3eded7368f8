import Foundation
import TaskerStepModel
import Yams

/// YAML reading for task templates.
///
/// A file is parsed into a `JSONValue` tree first (one document per file, as upstream), then decoded
/// as a `TaskTemplate` through its JSON form, so YAML and database JSON share one decoder. Scalars
/// are typed the way upstream's YAML 1.2 reader types them: only `true`/`false` are booleans
/// (`yes`/`on` stay strings), timestamps stay strings, quoted scalars are always strings.
public enum TemplateYAML {
    /// YAML 1.1's extra booleans, merge keys and timestamps are not special in YAML 1.2.
    static let resolver: Resolver = {
        var resolver = Resolver.default.removing(.timestamp).removing(.merge).removing(.value)
        if let replaced = try? resolver.replacing(.bool, with: "^(?:true|True|TRUE|false|False|FALSE)$") {
            resolver = replaced
        }
        return resolver
    }()

    /// The largest template text accepted, in bytes (1 MiB; real templates are a few KiB).
    public static let maxTemplateBytes = 1 << 20
    /// The most nodes a template may expand to, every alias (`*name`) counted as the whole node it
    /// repeats: a few hundred bytes of nested aliases ("billion laughs") would expand to billions of
    /// JSON values. Measured before Yams composes the text (`YAMLAliasBudget`), and again while
    /// converting to JSON.
    public static let maxExpandedNodes = 250_000
    /// The deepest nesting of collections a template may have, counted by `YAMLNesting` before Yams,
    /// whose composer recurses per level, sees the text (real templates nest fewer than 10 levels).
    public static let maxNesting = 64

    /// Parses one YAML document into JSON. Throws `TemplateYAMLError` for a syntax error, an empty
    /// document, several documents, a text over `maxTemplateBytes`, one nesting deeper than
    /// `maxNesting` or one expanding (aliases included) to more than `maxExpandedNodes` nodes.
    public static func parse(_ text: String) throws -> JSONValue {
        guard text.utf8.count <= maxTemplateBytes else {
            throw TemplateYAMLError(message: "the template is \(text.utf8.count) bytes; at most \(maxTemplateBytes) are accepted")
        }
        let bytes = Array(text.utf8)
        if let line = YAMLNesting.depth(of: bytes, stoppingAfter: maxNesting).line {
            throw TemplateYAMLError(message: "the template nests collections more than \(maxNesting) levels deep (line \(line))")
        }
        var documents: [Node] = []
        do {
            if try YAMLAliasBudget.exceeds(text, limit: maxExpandedNodes, resolver: resolver) {
                throw TemplateYAMLError(
                    message: "the template expands to more than \(maxExpandedNodes) YAML nodes "
                        + "(aliases counted at every use)")
            }
            var sequence = try Yams.compose_all(yaml: text, resolver)
            while let node = sequence.next() { documents.append(node) }
            if let error = sequence.error { throw error }
        } catch let error as TemplateYAMLError {
            throw error
        } catch {
            throw TemplateYAMLError(message: "invalid YAML: \(error)")
        }
        guard documents.count == 1, let root = documents.first else {
            throw TemplateYAMLError(
                message: documents.isEmpty
                    ? "the file holds no YAML document"
                    : "the file holds \(documents.count) YAML documents; one template per file")
        }
        var budget = maxExpandedNodes
        return try json(from: root, budget: &budget)
    }

    /// Parses and decodes one template.
    public static func decodeTemplate(_ text: String) throws -> TaskTemplate {
        try TaskTemplate.fromJSON(parse(text))
    }

    /// `node` as JSON; every node converted (an alias's target again at each use) costs one unit of
    /// `budget`, so the work and the memory are bounded whatever the aliases multiply to.
    static func json(from node: Node, budget: inout Int) throws -> JSONValue {
        budget -= 1
        guard budget >= 0 else {
            throw TemplateYAMLError(
                message: "the template expands to more than \(maxExpandedNodes) YAML nodes "
                    + "(aliases counted at every use)\(location(node))")
        }
        switch node {
        case .scalar(let scalar):
            return scalarValue(scalar, tag: Tag.Name(rawValue: node.tag.rawValue))
        case .sequence(let sequence):
            var items: [JSONValue] = []
            for item in sequence { items.append(try json(from: item, budget: &budget)) }
            return .array(items)
        case .mapping(let mapping):
            var members: [String: JSONValue] = [:]
            for (key, value) in mapping {
                guard case .scalar(let keyScalar) = key else {
                    throw TemplateYAMLError(message: "a mapping key is not a scalar\(location(key))")
                }
                if members[keyScalar.string] != nil {
                    throw TemplateYAMLError(message: "duplicate key \"\(keyScalar.string)\"\(location(key))")
                }
                members[keyScalar.string] = try json(from: value, budget: &budget)
            }
            return .object(members)
        case .alias:
            throw TemplateYAMLError(message: "unresolved YAML alias\(location(node))")
        }
    }

    private static func scalarValue(_ scalar: Node.Scalar, tag: Tag.Name) -> JSONValue {
        switch tag {
        case .null:
            return .null
        case .bool:
            return .bool(scalar.string.lowercased() == "true")
        case .int:
            if let value = Int64.construct(from: scalar) { return .int(value) }
            if let value = Double.construct(from: scalar) { return .double(value) }
            return .string(scalar.string)
        case .float:
            if let value = Double.construct(from: scalar), value.isFinite { return .double(value) }
            return .string(scalar.string)
        default:
            return .string(scalar.string)
        }
    }

    private static func location(_ node: Node) -> String {
        guard let mark = node.mark else { return "" }
        return " (line \(mark.line), column \(mark.column))"
    }
}

/// A file that is not one well-formed YAML document.
public struct TemplateYAMLError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
}
