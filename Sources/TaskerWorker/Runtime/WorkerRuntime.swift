import Foundation
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Everything the operator surface (REST, gRPC, metrics, health) reads from a running worker.
/// Built once in `WorkerDaemon.init` with the pipeline, every part of which runs in the worker's
/// `ServiceGroup`; nothing in it is half-initialised.
package struct WorkerRuntime: Sendable {
    package let configuration: TaskerConfiguration
    package let identity: WorkerIdentity
    package let pool: PostgresConnectionPool
    /// Where the worker's queues are: `pool`, or the queues' own database (`[common.pgmq_database]`).
    package let queuePool: PostgresConnectionPool
    package let templates: TaskTemplateRegistry
    package let handlers: HandlerRegistry
    package let statistics: WorkerStatistics
    /// The claim stage: claiming on or off, and what it accepts.
    package let executor: StepExecutor
    /// The worker's actors (the domain event publisher).
    let actors: WorkerActorRegistry
    package let eventSystem: WorkerEventSystem
    /// The broker's connection when RabbitMQ carries the messages (health and metrics read its
    /// state and queue depths).
    package let broker: RabbitMQMessaging?
    /// Its `capacity`: the handler permits and the claimed-but-waiting backlog (channel saturation, load).
    package let dispatch: HandlerDispatchService
    /// When this worker process started (uptime).
    package let startedAt: Date
    /// Addresses the REST and gRPC servers really bound (port 0 in tests), set once they listen.
    package let boundAddresses: BoundAddresses
    /// The results being stored (readiness fails while one stays unstored too long).
    package var resultStorage = ResultStorageMonitor()
    /// The one health evaluation the REST and gRPC probes share (single-flight, reused for 1 s).
    package let healthProbes = HealthProbeCache()
    /// Logs each change of readiness with the checks that failed.
    let readinessTransitions = ReadinessTransitions()

    /// The domain event publisher.
    package var domainEvents: DomainEventActor { actors.domainEvents }

    /// The worker's status: statistics, pool, claiming, handler permits, namespaces.
    package func status() async -> WorkerStatus {
        let capacity = dispatch.capacity
        return WorkerStatus(
            workerID: identity.workerID, publicID: identity.publicID, statistics: statistics.snapshot,
            pool: await pool.statistics, acceptingSteps: executor.isAccepting,
            handlerPermitsInUse: capacity.handlerPermitsInUse, handlerPermits: capacity.handlerPermits,
            overdueHandlers: dispatch.overdueHandlers, namespaces: await templates.supportedNamespaces)
    }
}
