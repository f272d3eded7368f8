import Foundation
import Logging
import TaskerHandlerSDK

/// A step event polled from the embedded worker's dispatch channel (upstream's `FfiStepEvent`, the
/// document `ForeignStepEvent.make` writes): the step's context as a handler sees it, and the
/// handler definition it is resolved by. Its text is untrusted: read through `UntrustedJSON`, every
/// member checked, an error naming the member that is wrong.
struct StepEvent: Sendable {
    /// What was wrong with an event's document.
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    var eventID: String
    var context: StepContext
    var handler: HandlerDefinition

    /// The ids an event names, read before the rest so that a malformed event can still be
    /// answered (its result needs the event id and the step uuid).
    struct Address: Sendable {
        var eventID: String
        var stepUUID: UUID
        var taskUUID: UUID?
    }

    static func address(of document: JSONValue) -> Address? {
        guard let eventID = document["event_id"]?.stringValue, let step = document["step_uuid"]?.stringValue,
            let stepUUID = UUID(uuidString: step)
        else { return nil }
        return Address(eventID: eventID, stepUUID: stepUUID, taskUUID: document["task_uuid"]?.stringValue.flatMap(UUID.init(uuidString:)))
    }

    init(_ document: JSONValue, timeout defaultTimeout: Duration, logger: Logger) throws(Malformed) {
        func string(_ value: JSONValue?, _ path: String) throws(Malformed) -> String {
            guard let text = value?.stringValue else { throw Malformed(description: "\(path) is not a string") }
            return text
        }
        func uuid(_ value: JSONValue?, _ path: String) throws(Malformed) -> UUID {
            guard let uuid = UUID(uuidString: try string(value, path)) else { throw Malformed(description: "\(path) is not a UUID") }
            return uuid
        }
        func int(_ value: JSONValue?, _ path: String) throws(Malformed) -> Int {
            guard case .int(let number)? = value, let int = Int(exactly: number) else {
                throw Malformed(description: "\(path) is not an integer")
            }
            return int
        }
        let sequence = document["task_sequence_step"] ?? .null
        let task = sequence["task"] ?? .null
        let step = sequence["workflow_step"] ?? .null
        let definition = sequence["step_definition"] ?? .null
        do {
            handler = try (definition["handler"] ?? .null).decode(HandlerDefinition.self)
        } catch {
            throw Malformed(description: "task_sequence_step.step_definition.handler: \(error)")
        }
        // A stored dependency result that does not read as a result is left out, as the worker's own
        // dispatcher does (`StepExecutor` hydration): the handler sees it as absent.
        var dependencies: [String: StepExecutionResult] = [:]
        if case .object(let members)? = sequence["dependency_results"] {
            for (name, stored) in members {
                if let result = try? stored.decode(StepExecutionResult.self) {
                    dependencies[name] = result
                } else {
                    logger.warning("a dependency result does not read as a step result; left out", metadata: ["dependency": "\(name)"])
                }
            }
        }
        let checkpoint = step["checkpoint"].flatMap { $0.isNull ? nil : $0 }
        let timeout = definition["timeout_seconds"].flatMap { value -> Duration? in
            if case .int(let seconds) = value, seconds > 0 { return .seconds(seconds) }
            return nil
        }
        let taskUUID = try uuid(document["task_uuid"], "task_uuid")
        let stepUUID = try uuid(document["step_uuid"], "step_uuid")
        let correlationID = try uuid(document["correlation_id"], "correlation_id")
        let stepName = try string(step["name"], "task_sequence_step.workflow_step.name")
        let namespace = try string(task["namespace_name"], "task_sequence_step.task.namespace_name")
        eventID = try string(document["event_id"], "event_id")
        context = StepContext(
            taskUUID: taskUUID, stepUUID: stepUUID, correlationID: correlationID, namespace: namespace,
            taskName: try string(task["task_name"], "task_sequence_step.task.task_name"),
            taskVersion: try string(task["task_version"], "task_sequence_step.task.task_version"),
            stepName: stepName,
            templateStepName: step["template_step_name"]?.stringValue ?? stepName,
            taskContext: task["task"]?["context"] ?? .null, stepInputs: step["inputs"] ?? .null,
            stepConfig: handler.initialization, dependencyResults: dependencies,
            attempt: try int(step["attempts"], "task_sequence_step.workflow_step.attempts"),
            maxAttempts: try int(step["max_attempts"], "task_sequence_step.workflow_step.max_attempts"),
            checkpoint: checkpoint, timeout: timeout ?? defaultTimeout,
            logger: StepLogMetadata.logger(
                logger,
                StepLogMetadata.of(
                    taskUUID: taskUUID, stepUUID: stepUUID, correlationID: correlationID,
                    ["step_name": "\(stepName)", "namespace": "\(namespace)", "handler": "\(handler.callable)"])),
            handlerCallable: handler.callable, handlerMethod: handler.effectiveMethod)
    }
}
