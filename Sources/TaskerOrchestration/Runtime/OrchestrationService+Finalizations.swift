import Foundation
import Logging
import TaskerModel

/// A message of `orchestration_task_finalizations`: upstream's `FinalizationHydrator` reads only its
/// `task_uuid` (a UUID string); other keys are ignored. Nothing in Tasker sends it today (upstream's
/// `send_task_finalization` has no caller, and neither does this orchestration): it is consumed for
/// whoever does, e.g. an operator re-driving a task.
struct TaskFinalizationRequest: Sendable, Equatable {
    var taskUUID: UUID

    /// Why a finalization message is refused.
    enum Refusal: Error, CustomStringConvertible {
        case undecodableBody(String)
        case missingTaskUUID(found: String)

        var description: String {
            switch self {
            case .undecodableBody(let reason): return "body is not readable JSON: \(reason)"
            case .missingTaskUUID(let found):
                return "expected an object with a string \"task_uuid\" holding a UUID, found \(found)"
            }
        }
    }

    init(_ message: QueueMessage) throws(Refusal) {
        if let error = message.bodyError { throw .undecodableBody(error) }
        guard let text = message.message["task_uuid"]?.stringValue, let uuid = UUID(uuidString: text) else {
            let rendered = (try? message.message.jsonString()) ?? "\(message.message)"
            throw .missingTaskUUID(found: String(rendered.prefix(200)))
        }
        taskUUID = uuid
    }
}

extension OrchestrationService {
    /// A finalization message: the task finalized through ``TaskFinalizationService`` (its own
    /// transaction), then the message archived. Refused bodies and unknown tasks are archived as
    /// poison with an error log; a transient failure leaves the message for its visibility timeout.
    func handleFinalization(_ message: QueueMessage) async -> MessageDisposition {
        let request: TaskFinalizationRequest
        do {
            request = try TaskFinalizationRequest(message)
        } catch {
            statistics.recordPoison()
            logger.error(
                "finalization message refused and archived",
                metadata: ["msg_id": "\(message.msgID)", "error": "\(error)"])
            return .poison
        }
        do {
            let result = try await processor.process(.finalizeTask(request.taskUUID))
            guard case .taskFinalized(let state?) = result else {
                statistics.recordPoison()
                logger.error(
                    "finalization message for an unknown task archived",
                    metadata: ["msg_id": "\(message.msgID)", "task_uuid": "\(request.taskUUID)"])
                return .poison
            }
            statistics.recordFinalization()
            logger.info(
                "finalization message processed",
                metadata: ["msg_id": "\(message.msgID)", "task_uuid": "\(request.taskUUID)", "state": "\(state.rawValue)"])
            return .finished
        } catch  where error.isTransientOrchestrationFailure {
            logger.warning(
                "finalization message not processed; retried later",
                metadata: ["msg_id": "\(message.msgID)", "task_uuid": "\(request.taskUUID)", "error": "\(error)"])
            return .retry
        } catch {
            statistics.recordPoison()
            logger.error(
                "finalization of a task failed; message archived",
                metadata: ["msg_id": "\(message.msgID)", "task_uuid": "\(request.taskUUID)", "error": "\(error)"])
            return .poison
        }
    }
}
