import Foundation
import Synchronization
import TaskerStepModel

/// Handlers keyed by `handler.callable` (the explicit mapping), then any added
/// ``StepHandlerResolver``s: upstream's resolver chain. Safe to share and to register into at any time.
public final class HandlerRegistry: Sendable {
    /// The resolver name of the registry's own table (a template's `handler.resolver`).
    public static let explicitMapping = "explicit_mapping"
    /// The explicit mapping's place in the chain (upstream's).
    public static let explicitMappingPriority = 10

    private let handlers: Mutex<[String: any StepHandler]>
    private let resolvers: Mutex<[any StepHandlerResolver]>

    /// An empty registry.
    public init() {
        handlers = Mutex([:])
        resolvers = Mutex([])
    }

    /// Adds `resolver` to the chain (after those of the same priority already there); a resolver
    /// of the same name is replaced. The name `explicit_mapping` is the registry's own.
    public func add(resolver: some StepHandlerResolver) {
        precondition(resolver.name != Self.explicitMapping, "\(Self.explicitMapping) is the registry's own resolver")
        let boxed: any StepHandlerResolver = resolver
        resolvers.withLock { chain in
            chain.removeAll { $0.name == boxed.name }
            let index = chain.firstIndex { $0.priority > boxed.priority } ?? chain.endIndex
            chain.insert(boxed, at: index)
        }
    }

    /// The chain's resolver names in the order they are asked, the explicit mapping included.
    public var resolverNames: [String] {
        let added = resolvers.withLock { $0 }
        let before = added.filter { $0.priority < Self.explicitMappingPriority }.map(\.name)
        let after = added.filter { $0.priority >= Self.explicitMappingPriority }.map(\.name)
        return before + [Self.explicitMapping] + after
    }

    /// Resolves a template's `handler`: only the resolver `handler.resolver` names when it names one,
    /// else the chain in priority order (the explicit mapping by `callable`, then by
    /// `templateStepName`: the example worker's fallback).
    public func resolve(_ handler: HandlerDefinition, templateStepName: String? = nil) -> HandlerResolution {
        let added = resolvers.withLock { $0 }
        if let hint = handler.resolver, !hint.isEmpty {
            if hint == Self.explicitMapping {
                return explicitlyMapped(handler.callable, templateStepName: templateStepName).map { .found($0) }
                    ?? .notFound(reason: "no handler registered for \(handler.callable) (handler.resolver = \(hint))")
            }
            guard let resolver = added.first(where: { $0.name == hint }) else {
                return .notFound(
                    reason:
                        "handler.resolver \"\(hint)\" names no resolver of this worker (its resolvers: \(resolverNames.joined(separator: ", ")))"
                )
            }
            return resolver.resolve(handler).map { .found($0) }
                ?? .notFound(reason: "resolver \(hint) found no handler for \(handler.callable)")
        }
        for resolver in added where resolver.priority < Self.explicitMappingPriority {
            if let found = resolver.resolve(handler) { return .found(found) }
        }
        if let found = explicitlyMapped(handler.callable, templateStepName: templateStepName) { return .found(found) }
        for resolver in added where resolver.priority >= Self.explicitMappingPriority {
            if let found = resolver.resolve(handler) { return .found(found) }
        }
        return .notFound(reason: "no handler for \(handler.callable) (resolvers asked: \(resolverNames.joined(separator: ", ")))")
    }

    private func explicitlyMapped(_ callable: String, templateStepName: String?) -> (any StepHandler)? {
        handlers.withLock { table in
            if let handler = table[callable] { return handler }
            if let name = templateStepName { return table[name] }
            return nil
        }
    }

    /// A registry holding the diagnostic handlers (`tasker.noop`, `tasker.echo`,
    /// `tasker.fail`, `tasker.sleep`).
    public static func withBuiltIns() -> HandlerRegistry {
        let registry = HandlerRegistry()
        BuiltInHandlers.register(into: registry)
        return registry
    }

    /// Registers (or replaces) the handler for `callable`.
    public func register(_ callable: String, _ handler: some StepHandler) {
        let boxed: any StepHandler = handler
        handlers.withLock { $0[callable] = boxed }
    }

    /// Registers a closure as the handler for `callable`, with `methods`: more entry points a
    /// template may name with `handler.method`.
    public func register(
        _ callable: String, version: String = "1.0.0", methods: [String: ClosureStepHandler.Body] = [:],
        _ body: @escaping ClosureStepHandler.Body
    ) {
        register(callable, ClosureStepHandler(version: version, methods: methods, body))
    }

    /// Removes the handler for `callable`; returns whether one was registered.
    @discardableResult
    public func unregister(_ callable: String) -> Bool {
        handlers.withLock { $0.removeValue(forKey: callable) != nil }
    }

    /// The handler for `callable`, if any.
    public func handler(for callable: String) -> (any StepHandler)? {
        handlers.withLock { $0[callable] }
    }

    /// The handler the chain finds for `callable` (no method, no resolver hint), else for
    /// `templateStepName` (the example worker's fallback).
    public func resolve(callable: String, templateStepName: String?) -> (any StepHandler)? {
        resolve(HandlerDefinition(callable: callable), templateStepName: templateStepName).handler
    }

    /// Whether a handler is registered for `callable`.
    public func contains(_ callable: String) -> Bool {
        handlers.withLock { $0[callable] != nil }
    }

    /// The registered callables, sorted.
    public var callables: [String] {
        handlers.withLock { $0.keys.sorted() }
    }

    /// The number of registered handlers.
    public var count: Int {
        handlers.withLock { $0.count }
    }
}
