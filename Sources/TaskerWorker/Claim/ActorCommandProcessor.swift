import TaskerModel
import TaskerPostgres

/// The one entry for `WorkerCommand`s: routes each to the actor that owns it. It holds no business
/// logic; a status is read from the components that keep the figures.
package struct ActorCommandProcessor: Sendable {
    package let actors: WorkerActorRegistry
    private let identity: WorkerIdentity
    private let statistics: WorkerStatistics
    private let pool: PostgresConnectionPool
    private let dispatch: HandlerDispatchService
    private let templates: TaskTemplateRegistry

    package init(
        actors: WorkerActorRegistry, identity: WorkerIdentity, statistics: WorkerStatistics,
        pool: PostgresConnectionPool, dispatch: HandlerDispatchService, templates: TaskTemplateRegistry
    ) {
        self.actors = actors
        self.identity = identity
        self.statistics = statistics
        self.pool = pool
        self.dispatch = dispatch
        self.templates = templates
    }

    @discardableResult
    package func process(_ command: WorkerCommand) async -> WorkerCommandResponse {
        switch command {
        case .executeStepFromMessage(let delivery):
            return .delivery(await actors.stepExecutor.execute(delivery))
        case .executeStepsFromMessages(let deliveries):
            return .deliveries(await actors.stepExecutor.execute(batch: deliveries))
        case .getWorkerStatus:
            return .status(await status())
        case .setEventIntegration(let enabled):
            await actors.stepExecutor.setAccepting(enabled)
        case .shutdown:
            actors.stepExecutor.closeIntake()
            await actors.stepExecutor.setAccepting(false)
        }
        return .accepted
    }

    private func status() async -> WorkerStatus {
        let capacity = dispatch.capacity
        return WorkerStatus(
            workerID: identity.workerID, publicID: identity.publicID, statistics: statistics.snapshot,
            pool: await pool.statistics, acceptingSteps: await actors.stepExecutor.isAccepting,
            handlerPermitsInUse: capacity.handlerPermitsInUse, handlerPermits: capacity.handlerPermits,
            overdueHandlers: dispatch.overdueHandlers, namespaces: await templates.supportedNamespaces)
    }
}
