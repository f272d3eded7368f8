import Foundation
import Logging
import TaskerModel
import TaskerPostgres

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
                releasePermit()
                await finish(step, dispatchError(step, .handlerError, callable, message: "\(error)", startedAt: startedAt))
                return
            }
            switch await channel.submit(event) {
            case .completed(let result):
                releasePermit()
                await finish(step, Self.filled(result, identity: identity, startedAt: startedAt))
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

    /// A foreign result with what it left out filled in from the dispatch: the worker, the host,
    /// the start and completion times.
    static func filled(_ result: StepExecutionResult, identity: WorkerIdentity, startedAt: Date) -> StepExecutionResult {
        var result = result
        if result.metadata.workerID == nil { result.metadata.workerID = identity.workerID }
        if result.metadata.workerHostname == nil { result.metadata.workerHostname = identity.hostname }
        if result.metadata.startedAt == nil {
            result.metadata.startedAt = startedAt
            result.metadata.completedAt = Date()
            if result.metadata.executionTimeMs == 0 {
                result.metadata.executionTimeMs = Int64(max(0, Date().timeIntervalSince(startedAt) * 1000))
            }
        }
        return result
    }
}
