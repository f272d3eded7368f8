import AsyncAlgorithms
import Logging

/// Routes every `WorkerCommand` to the actor that owns it. It holds no business logic.
public struct ActorCommandProcessor: Sendable {
    public let actors: WorkerActorRegistry
    private let completions: AsyncChannel<StepCompletion>

    public init(actors: WorkerActorRegistry, completions: AsyncChannel<StepCompletion>) {
        self.actors = actors
        self.completions = completions
    }

    @discardableResult
    public func process(_ command: WorkerCommand) async -> WorkerCommandResponse {
        switch command {
        case .executeStep(let message, let queue, let msgID):
            return .delivery(await actors.stepExecutor.execute(message, from: StepDelivery(queue: queue, msgID: msgID, message: .null)))
        case .executeStepWithCorrelation(var message, let queue, let msgID, let correlationID):
            message.correlationID = correlationID
            return .delivery(await actors.stepExecutor.execute(message, from: StepDelivery(queue: queue, msgID: msgID, message: .null)))
        case .executeStepFromMessage(let delivery):
            return .delivery(await actors.stepExecutor.execute(delivery))
        case .executeStepsFromMessages(let deliveries):
            return .deliveries(await actors.stepExecutor.execute(batch: deliveries))
        case .sendStepResult(let completion):
            await actors.completion.send(completion)
        case .processStepCompletion(let completion):
            await completions.send(completion)
        case .getWorkerStatus:
            return .status(await actors.status.status())
        case .setEventIntegration(let enabled):
            await actors.stepExecutor.setAccepting(enabled)
        case .healthCheck:
            return .health(await actors.status.health())
        case .shutdown:
            await actors.stepExecutor.setAccepting(false)
        }
        return .accepted
    }
}
