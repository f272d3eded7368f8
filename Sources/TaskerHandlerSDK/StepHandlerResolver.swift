import TaskerStepModel

/// One way of finding the handler of a template's `handler` (upstream's `StepHandlerResolver`): the
/// registry asks its resolvers in ascending ``priority`` order, or only the one a template's
/// `handler.resolver` names. The registry's own table is ``HandlerRegistry/explicitMapping``
/// (priority 10). Swift has no class lookup by name (as upstream's Rust worker); add a resolver for
/// any other scheme, e.g. callables `service://…` found in a service directory.
public protocol StepHandlerResolver: Sendable {
    /// The name a template's `handler.resolver` uses to pick this resolver.
    var name: String { get }
    /// Lower first. The explicit mapping is 10; upstream's class lookup resolvers are 100.
    var priority: Int { get }
    /// The handler for `handler`, or nil when this resolver does not know it.
    func resolve(_ handler: HandlerDefinition) -> (any StepHandler)?
}

/// What ``HandlerRegistry/resolve(_:templateStepName:)`` found.
public enum HandlerResolution: Sendable {
    case found(any StepHandler)
    /// No resolver knows the handler; the reason names what was asked and what exists.
    case notFound(reason: String)

    /// The handler, if found.
    public var handler: (any StepHandler)? {
        if case .found(let handler) = self { return handler }
        return nil
    }
}
