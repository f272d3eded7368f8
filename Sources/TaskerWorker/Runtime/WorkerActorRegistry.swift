import Foundation
import Logging
import TaskerPostgres
import TaskerModel

/// An actor of the worker with lifecycle hooks, called by `WorkerActorRegistry`.
public protocol WorkerActor: Actor {
    var actorName: String { get }
    /// Called once before the worker processes anything.
    func started() async
    /// Called once after the pipeline has drained.
    func stopped() async
}

extension WorkerActor {
    public func started() async {}
    public func stopped() async {}
}

/// The worker's actors, built once with all their dependencies (no half-initialised state).
public struct WorkerActorRegistry: Sendable {
    public let stepExecutor: StepExecutorActor
    public let completion: CompletionActor
    public let templateCache: TemplateCacheActor
    public let domainEvents: DomainEventActor
    public let status: WorkerStatusActor

    private var all: [any WorkerActor] { [templateCache, status, domainEvents, completion, stepExecutor] }

    /// Runs every actor's `started()` hook, in dependency order.
    public func startAll() async {
        for actor in all { await actor.started() }
    }

    /// Runs every actor's `stopped()` hook, in reverse order.
    public func stopAll() async {
        for actor in all.reversed() { await actor.stopped() }
    }
}

/// Finds a step instance's template step through the template registry's cache
/// (`named_tasks.configuration`, read once per template).
public actor TemplateCacheActor: WorkerActor {
    public nonisolated let actorName = "template_cache"
    private let registry: TaskTemplateRegistry
    private let logger: Logger

    public init(registry: TaskTemplateRegistry, logger: Logger = Logger(label: "tasker.template_cache")) {
        self.registry = registry
        self.logger = logger
    }

    /// Database errors in a row before `stepDefinition` gives up and throws.
    static let lookupAttempts = 3

    /// The template step `step` runs, or nil when the template or the step is unknown (or the
    /// stored template is unreadable: `TaskTemplateRegistryError`), which fails the step with
    /// `handler_not_found`. A database error is no such answer: the lookup is tried again
    /// (`lookupAttempts` times, with backoff) and then thrown, so the caller can retry the step
    /// instead of failing it for good.
    public func stepDefinition(for step: HydratedStep) async throws -> StepDefinition? {
        var schedule = RetrySchedule(backoff: ReconnectBackoff(initial: .milliseconds(50), maximum: .seconds(1)))
        let metadata: Logger.Metadata = [
            "namespace": "\(step.namespace)", "task_name": "\(step.taskName)", "task_version": "\(step.taskVersion)"]
        while true {
            do {
                let template = try await registry.template(namespace: step.namespace, name: step.taskName, version: step.taskVersion)
                return template?.steps.first { $0.name == step.templateStepName }
            } catch let error as TaskTemplateRegistryError {
                logger.error("cannot use the stored task template", metadata: metadata.merging(
                    ["error": "\(error)"], uniquingKeysWith: { $1 }))
                return nil
            } catch {
                guard let delay = schedule.failed(error), schedule.failures < Self.lookupAttempts else {
                    logger.error("cannot load the task template; giving up for this attempt", metadata: metadata.merging(
                        ["error": "\(error)", "attempts": "\(schedule.failures)"], uniquingKeysWith: { $1 }))
                    throw error
                }
                logger.warning("cannot load the task template; trying again", metadata: metadata.merging(
                    ["error": "\(error)", "retry_in": "\(delay)"], uniquingKeysWith: { $1 }))
                try? await Task.sleep(for: delay)
            }
        }
    }

    public func supportedNamespaces() async -> [String] { await registry.supportedNamespaces }
}

/// Hands results to the completion pipeline (the upstream `FFICompletionActor`'s role): results
/// from the dispatch service arrive on the completion channel directly; results produced elsewhere
/// come through this actor.
public actor CompletionActor: WorkerActor {
    public nonisolated let actorName = "completion"
    private let processor: CompletionProcessorService

    public init(processor: CompletionProcessorService) {
        self.processor = processor
    }

    /// Stores a result now (one transaction, retried on database errors), then fires its events.
    public func send(_ completion: StepCompletion) async {
        await processor.store(completion)
    }
}

/// Reports the worker's status and health from lock-free statistics and live component state.
public actor WorkerStatusActor: WorkerActor {
    public nonisolated let actorName = "worker_status"
    private let identity: WorkerIdentity
    private let statistics: WorkerStatistics
    private let pool: PostgresConnectionPool
    private let capacity: WorkerCapacity
    private let dispatch: HandlerDispatchService
    private let executor: StepExecutorActor
    private let templates: TemplateCacheActor

    public init(identity: WorkerIdentity, statistics: WorkerStatistics, pool: PostgresConnectionPool,
                dispatch: HandlerDispatchService, executor: StepExecutorActor, templates: TemplateCacheActor) {
        self.identity = identity
        self.statistics = statistics
        self.pool = pool
        self.capacity = dispatch.capacity
        self.dispatch = dispatch
        self.executor = executor
        self.templates = templates
    }

    public func status() async -> WorkerStatus {
        WorkerStatus(
            workerID: identity.workerID, publicID: identity.publicID, statistics: statistics.snapshot,
            pool: await pool.statistics, acceptingSteps: await executor.isAccepting,
            handlerPermitsInUse: capacity.handlerPermitsInUse, handlerPermits: capacity.handlerPermits,
            overdueHandlers: dispatch.overdueHandlers, namespaces: await templates.supportedNamespaces())
    }

    /// Healthy when the database answers, claiming is on and the failure rate is under 5 %
    /// (degraded under 15 %), as upstream's step-processing check.
    public func health() async -> WorkerHealth {
        var reasons: [String] = []
        var status = WorkerHealth.Status.healthy
        do {
            try await pool.query("SELECT 1")
        } catch {
            return WorkerHealth(status: .unhealthy, reasons: ["database: \(error)"])
        }
        if !(await executor.isAccepting) {
            status = .degraded
            reasons.append("not accepting steps (shutting down or event integration off)")
        }
        let rate = statistics.snapshot.failureRate
        if rate >= 0.15 {
            status = .unhealthy
            reasons.append("step failure rate \(Int(rate * 100)) %")
        } else if rate >= 0.05 {
            if status == .healthy { status = .degraded }
            reasons.append("step failure rate \(Int(rate * 100)) %")
        }
        return WorkerHealth(status: status, reasons: reasons)
    }
}
