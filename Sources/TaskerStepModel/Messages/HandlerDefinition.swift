import Foundation
import TaskerText

/// How a step's handler is found and configured (`handler`).
public struct HandlerDefinition: Codable, Sendable, Equatable {
    /// Lookup key interpreted by the handler resolvers (e.g. `tasker.echo`).
    public var callable: String
    /// Entry method (nil means `call`).
    public var method: String?
    /// Resolver hint that bypasses the resolver chain.
    public var resolver: String?
    /// Constructor parameters: always an object (default `{}`).
    public var initialization: JSONValue

    public init(
        callable: String, method: String? = nil, resolver: String? = nil,
        initialization: JSONValue = .emptyObject
    ) {
        self.callable = callable
        self.method = method
        self.resolver = resolver
        self.initialization = initialization
    }

    /// `method`, or `"call"`.
    public var effectiveMethod: String { method ?? "call" }

    enum CodingKeys: String, CodingKey { case callable, method, resolver, initialization }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        callable = try c.decode(String.self, forKey: .callable)
        method = try c.decodeIfPresent(String.self, forKey: .method)
        resolver = try c.decodeIfPresent(String.self, forKey: .resolver)
        initialization = try c.decodeJSONObject(forKey: .initialization)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(callable, forKey: .callable)
        try c.encodeOrNull(method, forKey: .method)
        try c.encodeOrNull(resolver, forKey: .resolver)
        try c.encode(initialization, forKey: .initialization)
    }
}
