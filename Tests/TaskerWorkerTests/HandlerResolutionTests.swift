import Foundation
import TaskerModel
import TaskerWorker
import TaskerWorkerTesting
import Testing

/// A template's `handler.method` and `handler.resolver` in the Swift SDK (issue #28 item 4): the
/// named entry point runs, a missing one fails for good, and the resolver chain answers in
/// priority order or by the hint alone.
@Suite struct HandlerResolutionTests {
    /// A handler with three entry points, routed as upstream's `invoke_method`.
    struct PaymentHandler: StepHandler {
        func call(_ context: StepContext) async throws -> StepHandlerResult { .success(["did": "charge"]) }
        func refund(_ context: StepContext) async throws -> StepHandlerResult { .success(["did": "refund"]) }

        func invoke(method: String, _ context: StepContext) async throws -> StepHandlerResult {
            switch method {
            case "refund": try await refund(context)
            default: try await defaultInvoke(method: method, context)
            }
        }
    }

    /// Finds handlers for callables `service://NAME` (a resolver of another scheme).
    struct ServiceResolver: StepHandlerResolver {
        let name = "service_directory"
        let priority: Int
        func resolve(_ handler: HandlerDefinition) -> (any StepHandler)? {
            guard handler.callable.hasPrefix("service://") else { return nil }
            return ClosureStepHandler { _ in .success(["via": .string(name)]) }
        }
    }

    static func context() -> StepContext {
        StepContext(
            taskUUID: UUID(), stepUUID: UUID(), correlationID: UUID(), namespace: "payments", taskName: "pay",
            taskVersion: "1.0.0", stepName: "step")
    }

    static func did(_ result: StepHandlerResult) -> String? {
        guard case .success(.object(let members), _) = result.outcome else { return nil }
        return members["did"]?.stringValue ?? members["via"]?.stringValue
    }

    @Test func theTemplatesMethodRunsAndCallIsTheDefault() async throws {
        let registry = HandlerRegistry()
        registry.register("payments.processor", PaymentHandler())
        #expect(Self.did(try await registry.run("payments.processor", Self.context())) == "charge")
        #expect(Self.did(try await registry.run("payments.processor", method: "call", Self.context())) == "charge")
        #expect(Self.did(try await registry.run("payments.processor", method: "refund", Self.context())) == "refund")
    }

    @Test func aMethodTheHandlerLacksFailsForGoodNamingCallableAndMethod() async throws {
        let registry = HandlerRegistry()
        registry.register("payments.processor", PaymentHandler())
        registry.register("payments.simple") { _ in .success(["did": "simple"]) }
        for callable in ["payments.processor", "payments.simple"] {
            let result = try await registry.run(callable, method: "void", Self.context())
            guard case .failure(let failure) = result.outcome else {
                Issue.record("\(callable): \(result.outcome)")
                continue
            }
            #expect(failure.errorType == "method_not_found")
            #expect(!failure.retryable)
            #expect(failure.message.contains(callable) && failure.message.contains("\"void\""), "\(failure.message)")
        }
    }

    @Test func closureHandlersTakeMoreEntryPoints() async throws {
        let registry = HandlerRegistry()
        registry.register("payments.closure", methods: ["refund": { _ in .success(["did": "refund"]) }]) { _ in
            .success(["did": "charge"])
        }
        #expect(Self.did(try await registry.run("payments.closure", Self.context())) == "charge")
        #expect(Self.did(try await registry.run("payments.closure", method: "refund", Self.context())) == "refund")
        let missing = try await registry.run("payments.closure", method: "void", Self.context())
        guard case .failure(let failure) = missing.outcome else {
            Issue.record("\(missing.outcome)")
            return
        }
        #expect(failure.message.contains("call, refund"), "\(failure.message)")
    }

    @Test func theChainAsksResolversInPriorityOrderAroundTheExplicitMapping() {
        let registry = HandlerRegistry()
        registry.add(resolver: ServiceResolver(priority: 100))
        #expect(registry.resolverNames == ["explicit_mapping", "service_directory"])
        registry.register("service://billing") { _ in .success(["did": "mapped"]) }
        // The explicit mapping (10) answers before the service directory (100).
        #expect(registry.resolve(HandlerDefinition(callable: "service://billing")).handler is ClosureStepHandler)
        #expect(registry.resolve(HandlerDefinition(callable: "service://other")).handler != nil)
        registry.add(resolver: ServiceResolver(priority: 5))  // same name: replaced, now first
        #expect(registry.resolverNames == ["service_directory", "explicit_mapping"])
        guard case .notFound(let reason) = registry.resolve(HandlerDefinition(callable: "nowhere")) else {
            Issue.record("resolved an unknown callable")
            return
        }
        #expect(reason == "no handler for nowhere (resolvers asked: service_directory, explicit_mapping)")
    }

    @Test func aResolverHintAsksThatResolverAlone() async throws {
        let registry = HandlerRegistry()
        registry.add(resolver: ServiceResolver(priority: 100))
        registry.register("service://billing") { _ in .success(["did": "mapped"]) }
        let hinted = HandlerDefinition(callable: "service://billing", resolver: "service_directory")
        #expect(Self.did(try await registry.run("service://billing", resolver: "service_directory", Self.context())) == "service_directory")
        #expect(registry.resolve(hinted).handler != nil)
        let explicit = HandlerDefinition(callable: "service://other", resolver: "explicit_mapping")
        guard case .notFound(let reason) = registry.resolve(explicit) else {
            Issue.record("the explicit mapping answered for an unregistered callable")
            return
        }
        #expect(reason.contains("no handler registered for service://other"))
        guard case .notFound(let unknown) = registry.resolve(HandlerDefinition(callable: "x", resolver: "class_constant")) else {
            Issue.record("an unknown resolver answered")
            return
        }
        #expect(
            unknown
                == "handler.resolver \"class_constant\" names no resolver of this worker (its resolvers: explicit_mapping, service_directory)"
        )
    }

    @Test func handlerNotFoundKeepsUpstreamsTextUnlessThereIsAReason() {
        let now = Date()
        let plain = StepExecutionResult.dispatchError(
            stepUUID: UUID(), kind: .handlerNotFound, callable: "a.b", timeoutMs: nil, taskUUID: nil, message: nil,
            startedAt: now, completedAt: now, workerID: nil, hostname: nil)
        #expect(plain.error?.message == "Handler not found: a.b")
        let hinted = StepExecutionResult.dispatchError(
            stepUUID: UUID(), kind: .handlerNotFound, callable: "a.b", timeoutMs: nil, taskUUID: nil, message: "why",
            startedAt: now, completedAt: now, workerID: nil, hostname: nil)
        #expect(hinted.error?.message == "Handler not found: a.b (why)")
    }
}
