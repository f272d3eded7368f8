import Foundation
import Synchronization

/// Handlers keyed by `handler.callable`. Safe to share and to register into at any time.
public final class HandlerRegistry: Sendable {
    private let handlers: Mutex<[String: any StepHandler]>

    /// An empty registry.
    public init() {
        handlers = Mutex([:])
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

    /// Registers a closure as the handler for `callable`.
    public func register(
        _ callable: String, version: String = "1.0.0",
        _ body: @escaping @Sendable (StepContext) async throws -> StepHandlerResult
    ) {
        register(callable, ClosureStepHandler(version: version, body))
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

    /// The handler for `callable`, else for `templateStepName` (the example worker's fallback).
    public func resolve(callable: String, templateStepName: String?) -> (any StepHandler)? {
        handlers.withLock { table in
            if let handler = table[callable] { return handler }
            if let name = templateStepName { return table[name] }
            return nil
        }
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
