import Foundation
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

    /// Parses one YAML document into JSON. Throws `TemplateYAMLError` for a syntax error, an empty
    /// document or several documents.
    public static func parse(_ text: String) throws -> JSONValue {
        var documents: [Node] = []
        do {
            var sequence = try Yams.compose_all(yaml: text, resolver)
            while let node = sequence.next() { documents.append(node) }
            if let error = sequence.error { throw error }
        } catch let error as TemplateYAMLError {
            throw error
        } catch {
            throw TemplateYAMLError(message: "invalid YAML: \(error)")
        }
        guard documents.count == 1, let root = documents.first else {
            throw TemplateYAMLError(message: documents.isEmpty
                                    ? "the file holds no YAML document"
                                    : "the file holds \(documents.count) YAML documents; one template per file")
        }
        return try json(from: root)
    }

    /// Parses and decodes one template.
    public static func decodeTemplate(_ text: String) throws -> TaskTemplate {
        try TaskTemplate.fromJSON(parse(text))
    }

    static func json(from node: Node) throws -> JSONValue {
        switch node {
        case .scalar(let scalar):
            return scalarValue(scalar, tag: Tag.Name(rawValue: node.tag.rawValue))
        case .sequence(let sequence):
            return .array(try sequence.map { try json(from: $0) })
        case .mapping(let mapping):
            var members: [String: JSONValue] = [:]
            for (key, value) in mapping {
                guard case .scalar(let keyScalar) = key else {
                    throw TemplateYAMLError(message: "a mapping key is not a scalar\(location(key))")
                }
                if members[keyScalar.string] != nil {
                    throw TemplateYAMLError(message: "duplicate key \"\(keyScalar.string)\"\(location(key))")
                }
                members[keyScalar.string] = try json(from: value)
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
