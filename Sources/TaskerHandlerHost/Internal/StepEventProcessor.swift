import Foundation
import Logging
import TaskerHandlerSDK

/// Runs one polled step event's handler and says what goes back to the library: the stored-result
/// document (`tasker_complete_step_event`) or a checkpoint (`tasker_checkpoint_yield_step_event`).
/// Pure apart from the handler itself: no call into the library (``HandlerHost`` makes those, on
/// its own thread).
struct StepEventProcessor: Sendable {
    /// What to hand the library for an event.
    enum Reply: Sendable, Equatable {
        case complete(eventID: String, resultJSON: String)
        case checkpoint(eventID: String, checkpointJSON: String)
        /// Nothing can be answered (the event names no event id or step uuid); its timeout settles it.
        case unanswerable(reason: String)
    }

    let handlers: HandlerRegistry
    let logger: Logger
    let workerID: String?
    let hostname: String?
    /// A step's timeout when its template names none (the channel's own event timeout ends it anyway).
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
            return completion(StepHandlerResult.failure(failure), address: address, callable: "", version: nil, startedAt: startedAt)
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
        let outcome: Result<StepHandlerResult, any Error>
        do {
            outcome = .success(try await handler.invoke(method: context.handlerMethod, context))
        } catch {
            outcome = .failure(error)
        }
        if case .success(let result) = outcome, case .checkpointYield(let yield) = result.outcome {
            var checkpoint: [String: JSONValue] = [
                "step_uuid": .string(address.stepUUID.uuidString.lowercased()), "cursor": yield.cursor,
                "items_processed": .int(Int64(yield.itemsProcessed)),
            ]
            if let accumulated = yield.accumulatedResults { checkpoint["accumulated_results"] = accumulated }
            if let json = try? JSONValue.object(checkpoint).jsonString() {
                return .checkpoint(eventID: address.eventID, checkpointJSON: json)
            }
            let failure = StepFailure.permanent("the checkpoint is not storable JSON", errorType: "checkpoint_error")
            return completion(
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

    private func completion(
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
            return .complete(eventID: address.eventID, resultJSON: try result.jsonString())
        } catch {
            let failure = StepFailure.permanent("the handler's result is not storable: \(error)", errorType: "result_not_storable")
            let fallback = StepHandlerResult.failure(failure).toExecutionResult(
                stepUUID: address.stepUUID, startedAt: startedAt, completedAt: Date(), workerID: workerID, hostname: hostname)
            return .complete(eventID: address.eventID, resultJSON: (try? fallback.jsonString()) ?? "{}")
        }
    }
}
