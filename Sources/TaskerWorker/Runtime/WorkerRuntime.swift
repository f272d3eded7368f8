import Foundation
import TaskerModel
import TaskerPostgres

/// Everything the operator surface (REST, gRPC, metrics, health) reads from a running worker.
/// Built once in `WorkerDaemon.init` with the pipeline, every part of which runs in the worker's
/// `ServiceGroup`; nothing in it is half-initialised.
public struct WorkerRuntime: Sendable {
    public let configuration: TaskerConfiguration
    public let identity: WorkerIdentity
    public let pool: PostgresConnectionPool
    public let templates: TaskTemplateRegistry
    public let handlers: HandlerRegistry
    public let statistics: WorkerStatistics
    /// Routes `WorkerCommand`s (deliveries, status, event integration, shutdown) to the actors.
    public let commands: ActorCommandProcessor
    public let eventSystem: WorkerEventSystem
    /// Its `capacity`: the handler permits and the claimed-but-waiting backlog (channel saturation, load).
    public let dispatch: HandlerDispatchService
    public let domainEvents: DomainEventActor
    /// When this worker process started (uptime).
    public let startedAt: Date
    /// Addresses the REST and gRPC servers really bound (port 0 in tests), set once they listen.
    public let boundAddresses: BoundAddresses
    /// The results being stored (readiness fails while one stays unstored too long).
    public var resultStorage = ResultStorageMonitor()
    /// The one health evaluation the REST and gRPC probes share (single-flight, reused for 1 s).
    public let healthProbes = HealthProbeCache()

    public var actors: WorkerActorRegistry { commands.actors }
}
