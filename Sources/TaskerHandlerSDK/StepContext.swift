import Foundation
import Logging
import TaskerStepModel

/// Everything a handler sees of its step, filled by the dispatcher from hydration.
///
/// Mirrors the FFI `StepContext` of the Python SDK: `taskContext` is `input_data`
/// (`tasks.context`), `stepConfig` is `step_config` (`handler.initialization`), `stepInputs`
/// is `workflow_steps.inputs`, `dependencyResults` are the full results of all processed
/// ancestors keyed by step instance name.
public struct StepContext: Sendable {
    public var taskUUID: UUID
    public var stepUUID: UUID
    public var correlationID: UUID
    public var namespace: String
    public var taskName: String
    public var taskVersion: String
    /// The step instance name (`named_steps.name`, for example `process_batch_003`).
    public var stepName: String
    /// `inputs.__template_step_name`, else ``stepName``.
    public var templateStepName: String
    /// `tasks.context` (`.null` when NULL).
    public var taskContext: JSONValue
    /// `workflow_steps.inputs` (`.null` when NULL).
    public var stepInputs: JSONValue
    /// `step_definition.handler.initialization`.
    public var stepConfig: JSONValue
    /// `step_definition.handler.callable`: the address the handler was resolved by.
    public var handlerCallable: String
    /// `step_definition.handler.method`, else `"call"`: the entry point being run.
    public var handlerMethod: String
    /// Results of processed ancestors, keyed by step instance name.
    public var dependencyResults: [String: StepExecutionResult]
    /// `workflow_steps.attempts` after the claim (1 on the first run).
    public var attempt: Int
    /// `workflow_steps.max_attempts`.
    public var maxAttempts: Int
    /// `workflow_steps.checkpoint` (the last checkpoint yield), if any.
    public var checkpoint: JSONValue?
    /// How long the handler may run before it is cancelled.
    public var timeout: Duration
    /// The logger for the handler's own lines. The worker gives it its log handler and level and
    /// the step's metadata (`task_uuid`, `step_uuid`, `correlation_id`, `step_name`, `namespace`,
    /// `handler`), so every line a handler writes names its step; `import Logging` to use it.
    public var logger: Logger

    public init(
        taskUUID: UUID, stepUUID: UUID, correlationID: UUID, namespace: String, taskName: String,
        taskVersion: String, stepName: String, templateStepName: String? = nil,
        taskContext: JSONValue = .emptyObject, stepInputs: JSONValue = .null,
        stepConfig: JSONValue = .emptyObject, dependencyResults: [String: StepExecutionResult] = [:],
        attempt: Int = 1, maxAttempts: Int = 3, checkpoint: JSONValue? = nil, timeout: Duration = .seconds(30),
        logger: Logger? = nil, handlerCallable: String? = nil, handlerMethod: String = HandlerDefinition.defaultMethod
    ) {
        self.taskUUID = taskUUID
        self.stepUUID = stepUUID
        self.correlationID = correlationID
        self.namespace = namespace
        self.taskName = taskName
        self.taskVersion = taskVersion
        self.stepName = stepName
        self.templateStepName = templateStepName ?? stepName
        self.taskContext = taskContext
        self.stepInputs = stepInputs
        self.stepConfig = stepConfig
        self.handlerCallable = handlerCallable ?? templateStepName ?? stepName
        self.handlerMethod = handlerMethod
        self.dependencyResults = dependencyResults
        self.attempt = attempt
        self.maxAttempts = maxAttempts
        self.checkpoint = checkpoint
        self.timeout = timeout
        self.logger =
            logger
            ?? StepLogMetadata.logger(
                Logger(label: "tasker.handler"),
                StepLogMetadata.of(
                    taskUUID: taskUUID, stepUUID: stepUUID, correlationID: correlationID,
                    ["step_name": "\(stepName)", "namespace": "\(namespace)"]))
    }

    // MARK: Dependencies

    /// The `result` of a dependency (like the SDKs' `get_dependency_result`), or nil when the
    /// step is not among the processed ancestors.
    public func dependencyResult(_ name: String) -> JSONValue? {
        dependencyResults[name]?.result
    }

    /// The `result` of a dependency decoded as `T`; nil when the dependency is absent.
    public func dependencyResult<T: Decodable>(_ name: String, as type: T.Type) throws -> T? {
        guard let value = dependencyResult(name) else { return nil }
        return try value.decode(T.self)
    }

    /// A member of a dependency's `result` object (`get_dependency_field`), following `path`.
    public func dependencyField(_ name: String, _ path: String...) -> JSONValue? {
        var value = dependencyResult(name)
        for key in path { value = value?[key] }
        return value
    }

    // MARK: Task context and configuration

    /// A member of the task context (`input_data`).
    public func input(_ key: String) -> JSONValue? {
        taskContext[key]
    }

    /// A member of the task context decoded as `T`; nil when absent or `null`. A value that does
    /// not fit `T` (`"abc"` for an `Int`) is a permanent `validation_error` `StepFailure` naming its
    /// key path (`cannot decode context.amount: …`; ``StepDataCoding``): the same input fails the
    /// same way on every attempt, so it is not retried.
    public func input<T: Decodable>(_ key: String, as type: T.Type) throws(StepFailure) -> T? {
        guard let value = taskContext[key], !value.isNull else { return nil }
        return try StepDataCoding.decode(T.self, from: value, source: .taskContext, member: key)
    }

    /// A member of the handler configuration (`handler.initialization`).
    public func config(_ key: String) -> JSONValue? {
        stepConfig[key]
    }

    /// A member of the handler configuration decoded as `T`; nil when absent or `null`. A value
    /// that does not fit `T` is a permanent `configuration_error` `StepFailure` naming its key
    /// path (`cannot decode handler.initialization.timeout_ms: …`).
    public func config<T: Decodable>(_ key: String, as type: T.Type = T.self) throws(StepFailure) -> T? {
        guard let value = stepConfig[key], !value.isNull else { return nil }
        return try StepDataCoding.decode(T.self, from: value, source: .handlerConfiguration, member: key)
    }

    /// A member of the step's own inputs (`workflow_steps.inputs`).
    public func stepInput(_ key: String) -> JSONValue? {
        stepInputs[key]
    }

    // MARK: Batch workers

    /// The cursor inputs orchestration stored for a batch worker, or nil when the step's
    /// inputs are not batch worker inputs.
    public var batchWorkerInputs: BatchWorkerInputs? {
        try? BatchWorkerInputs(stepInputs)
    }

    /// The batch worker inputs, or an error saying why they are unusable.
    public func requireBatchWorkerInputs() throws -> BatchWorkerInputs {
        if stepInputs.isNull {
            throw StepFailure.permanent(
                "Missing inputs in workflow step", errorType: "batch_error",
                errorCode: "BATCH_ERROR")
        }
        do {
            return try BatchWorkerInputs(stepInputs)
        } catch {
            throw StepFailure.permanent(
                "Failed to deserialize BatchWorkerInputs from workflow_step.inputs: \(error)",
                errorType: "batch_error", errorCode: "BATCH_ERROR")
        }
    }

    /// Whether this is the final attempt (`attempt >= maxAttempts`).
    public var isLastAttempt: Bool { attempt >= maxAttempts }
}
