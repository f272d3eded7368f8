import Foundation
import Logging
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

extension HandlerDispatchService {
    /// Runs a step through the FFI dispatch channel, holding its handler permit (capacity and load
    /// shedding count it like a Swift handler) until its outcome: the foreign result goes into the
    /// completion channel like a Swift one; a checkpoint yield is persisted
    /// (`StepRepository.persistCheckpoint`) and the step dispatched again as a new event carrying
    /// it; no completion within `completion_timeout_ms` is a retryable `handler_timeout`; the
    /// shutdown drain deadline gives the drain's `handler_timeout`.
    func executeForeign(
        _ step: ClaimedStep, definition: StepDefinition, channel: ForeignDispatchChannel, startedAt: Date
    ) async {
        let callable = definition.handler.callable
        var checkpoint: JSONValue? = step.hydrated.checkpoint.isNull ? nil : step.hydrated.checkpoint
        var yielded = false
        while true {
            if drainDeadline.hasFired {
                // After a checkpoint yield the handler had started: the drain cut it short.
                releasePermit()
                await finishAtDrainDeadline(step, callable: callable, startedAt: startedAt, started: yielded)
                return
            }
            let event: ForeignStepEvent
            do {
                // The first event's wake-up counts from the claim; after a yield, from the re-dispatch.
                event = try ForeignStepEvent.make(
                    step, definition: definition, checkpoint: checkpoint, readyAt: yielded ? .now : step.claimedAt)
            } catch {
                // The event is made from the step's stored data only: making it again gives the same
                // answer, so the step fails for good, as a claimed step whose data cannot be read does.
                releasePermit()
                let failure = StepFailure(
                    message: "The step's stored data cannot be sent to its handler: \(error)",
                    errorType: StepExecutor.unreadableDataErrorType, retryable: false)
                await finish(
                    step,
                    .failure(
                        stepUUID: step.message.stepUUID, failure: failure, startedAt: startedAt, completedAt: Date(),
                        workerID: identity.workerID, hostname: identity.hostname))
                return
            }
            switch await channel.submit(event) {
            case .completed(let result):
                releasePermit()
                // Stored as the foreign SDK sent it, as upstream's worker stores it (nothing filled in).
                await finish(step, result)
            case .checkpoint(let yield):
                do {
                    checkpoint = try await pool.withConnection { c in
                        try await StepRepository.persistCheckpoint(c, stepUUID: step.message.stepUUID, yield: yield)
                    }
                    yielded = true
                    continue
                } catch {
                    releasePermit()
                    await finish(step, dispatchError(step, .checkpointError, callable, message: "\(error)", startedAt: startedAt))
                }
            case .timedOut:
                releasePermit()
                let timeoutMs = Int(channel.completionTimeout.inMilliseconds)
                await finish(step, dispatchError(step, .handlerTimeout, callable, timeoutMs: timeoutMs, startedAt: startedAt))
            case .drainDeadline(let polled):
                releasePermit()
                await finishAtDrainDeadline(step, callable: callable, startedAt: startedAt, started: polled || yielded)
            case .cancelled:
                releasePermit()
                logger.critical(
                    "forced stop while a foreign handler had the step: the step stays in_progress without a result",
                    metadata: metadata(step, ["handler": "\(callable)"]))
            }
            return
        }
    }
}
