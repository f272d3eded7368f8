import Foundation
import Logging
import TaskerHandlerSDK

/// Runs one polled step event's handler and says what goes back to the library: the stored-result
/// document (`tasker_complete_step_event`) or a checkpoint (`tasker_checkpoint_yield_step_event`).
/// Makes no call into the library itself (``HandlerHost`` makes those, on its own thread).
struct StepEventProcessor: Sendable {
    /// What to hand the library for an event.
    enum Reply: Sendable, Equatable {
        case complete(eventID: String, stepUUID: UUID, resultJSON: String)
        case checkpoint(eventID: String, stepUUID: UUID, checkpointJSON: String)
        /// Nothing can be answered (the event names no event id or step uuid); its timeout settles it.
        case unanswerable(reason: String)
    }

    let handlers: HandlerRegistry
    let logger: Logger
    let workerID: String?
    let hostname: String?
    /// A step's timeout when its template names none (the worker's `handler_timeout_ms` default).
    var defaultTimeout: Duration = .seconds(30)

    func process(_ text: String) async -> Reply {
        let startedAt = Date()
        let document: JSONValue
        do {
            document = try UntrustedJSON.decode(JSONValue.self, from: text, what: "the step event")
        } catch {
            return .unanswerable(reason: "the step event is not JSON: \(error)")
        }
        guard let address = StepEvent.address(of: document) else {
            return .unanswerable(reason: "the step event has no event_id or step_uuid")
        }
        let event: StepEvent
        do {
            event = try StepEvent(document, timeout: defaultTimeout, logger: logger)
        } catch {
            let failure = StepFailure.permanent("malformed step event: \(error)", errorType: "event_error")
            return complete(.failure(failure), address: address, callable: "", version: nil, startedAt: startedAt)
        }
        let resolution = handlers.resolve(event.handler, templateStepName: event.context.templateStepName)
        guard let handler = resolution.handler else {
            var reason: String?
            if case .notFound(let text) = resolution { reason = text }
            event.context.logger.error("no Swift handler for step", metadata: ["reason": "\(reason ?? "")"])
            let result = StepExecutionResult.dispatchError(
                stepUUID: address.stepUUID, kind: .handlerNotFound, callable: event.handler.callable, timeoutMs: nil,
                taskUUID: address.taskUUID, message: event.handler.resolver.map { !$0.isEmpty } == true ? reason : nil,
                startedAt: startedAt, completedAt: Date(), workerID: workerID, hostname: hostname)
            return encoded(result, address: address, startedAt: startedAt)
        }
        let context = event.context
        let work = Task { try await handler.invoke(method: context.handlerMethod, context) }
        guard let outcome = await Self.outcome(of: work, within: context.timeout) else {
            // Cancelled; a handler that ignores cancellation keeps its slot in the host until it returns.
            context.logger.warning("handler still running at its timeout; cancelled", metadata: ["timeout": "\(context.timeout)"])
            let result = StepExecutionResult.dispatchError(
                stepUUID: address.stepUUID, kind: .handlerTimeout, callable: event.handler.callable,
                timeoutMs: Int(context.timeout / .milliseconds(1)), taskUUID: address.taskUUID, message: nil,
                startedAt: startedAt, completedAt: Date(), workerID: workerID, hostname: hostname)
            return encoded(result, address: address, startedAt: startedAt)
        }
        if case .success(let result) = outcome, case .checkpointYield(let yield) = result.outcome {
            var checkpoint: [String: JSONValue] = [
                "step_uuid": .string(address.stepUUID.uuidString.lowercased()), "cursor": yield.cursor,
                "items_processed": .int(Int64(yield.itemsProcessed)),
            ]
            if let accumulated = yield.accumulatedResults { checkpoint["accumulated_results"] = accumulated }
            let value = JSONValue.object(checkpoint)
            // The library reads a checkpoint at most `maximumValueDepth` deep: deeper is refused here, saying so.
            if value.nestingDepth(stoppingAfter: UntrustedJSON.maximumValueDepth) <= UntrustedJSON.maximumValueDepth,
                let json = try? value.jsonString()
            {
                return .checkpoint(eventID: address.eventID, stepUUID: address.stepUUID, checkpointJSON: json)
            }
            let failure = StepFailure.permanent(
                "the checkpoint is nested more than \(UntrustedJSON.maximumValueDepth) levels deep", errorType: "checkpoint_error")
            return complete(
                .failure(failure), address: address, callable: event.handler.callable, version: handler.version, startedAt: startedAt)
        }
        if case .failure(let error) = outcome, !(error is StepFailure) {
            context.logger.info("handler failed", metadata: ["error": "\(error)"])
        }
        let result = StepHandlerResult.storedResult(
            of: outcome, stepUUID: address.stepUUID, taskUUID: address.taskUUID, callable: event.handler.callable,
            version: handler.version, startedAt: startedAt, workerID: workerID, hostname: hostname)
        return encoded(result, address: address, startedAt: startedAt)
    }

    /// The handler's outcome, or nil when it is still running at `timeout` (then it is cancelled; its
    /// task is not waited for).
    static func outcome(
        of work: Task<StepHandlerResult, any Error>, within timeout: Duration
    ) async -> Result<StepHandlerResult, any Error>? {
        let timer = TaskSlot()
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<StepHandlerResult, any Error>?, Never>) in
            let once = ResumeOnce(continuation)
            Task { once.resume(await work.result) }
            timer.set(
                Task {
                    do { try await Task.sleep(for: timeout) } catch { return }
                    once.resume(nil)
                })
        }
        timer.cancel()
        if outcome == nil { work.cancel() }
        return outcome
    }

    /// What replaces a reply the library refused as malformed (`TASKER_ERR_INVALID_ARGUMENT`): a
    /// refused checkpoint becomes a retryable `checkpoint_error`, a refused result a permanent failure
    /// saying why, so the step ends now instead of waiting out its event's timeout. Nil: nothing to send.
    func replacement(for reply: Reply, refusal: String) -> Reply? {
        switch reply {
        case .checkpoint(let eventID, let stepUUID, _):
            let failure = StepFailure.retryable("the worker refused the checkpoint: \(refusal)", errorType: "checkpoint_error")
            return fallback(failure, eventID: eventID, stepUUID: stepUUID)
        case .complete(let eventID, let stepUUID, _):
            let failure = StepFailure.permanent("the worker refused the handler's result: \(refusal)", errorType: "handler_error")
            return fallback(failure, eventID: eventID, stepUUID: stepUUID)
        case .unanswerable: return nil
        }
    }

    private func fallback(_ failure: StepFailure, eventID: String, stepUUID: UUID) -> Reply? {
        let result = StepHandlerResult.failure(failure).toExecutionResult(
            stepUUID: stepUUID, startedAt: Date(), completedAt: Date(), workerID: workerID, hostname: hostname)
        return (try? result.jsonString()).map { .complete(eventID: eventID, stepUUID: stepUUID, resultJSON: $0) }
    }

    private func complete(
        _ result: StepHandlerResult, address: StepEvent.Address, callable: String, version: String?, startedAt: Date
    ) -> Reply {
        let stored = StepHandlerResult.storedResult(
            of: .success(result), stepUUID: address.stepUUID, taskUUID: address.taskUUID, callable: callable,
            version: version, startedAt: startedAt, workerID: workerID, hostname: hostname)
        return encoded(stored, address: address, startedAt: startedAt)
    }

    /// The result's document; a result that cannot be written (nested too deep) becomes a permanent
    /// failure saying so, rather than an event left to time out.
    private func encoded(_ result: StepExecutionResult, address: StepEvent.Address, startedAt: Date) -> Reply {
        do {
            return .complete(eventID: address.eventID, stepUUID: address.stepUUID, resultJSON: try result.jsonString())
        } catch {
            let failure = StepFailure.permanent("the handler's result is not storable: \(error)", errorType: "result_not_storable")
            return fallback(failure, eventID: address.eventID, stepUUID: address.stepUUID)
                ?? .unanswerable(reason: "the handler's result is not storable: \(error)")
        }
    }
}
