import Foundation
import Logging
import TaskerHandlerSDK

extension StepContext {
    /// A step context for a unit test of a handler, built from the values the handler reads; no
    /// database, queue or worker is involved.
    ///
    /// Everything has a default: fresh UUIDs, namespace `test`, task `test_task` version `1.0.0`,
    /// step `step`, an empty task context and configuration, no inputs, no dependencies, the
    /// first of three attempts, no checkpoint, a 30 s timeout.
    ///
    /// ```swift
    /// let context = StepContext.testing(
    ///     taskContext: ["amount": 25],
    ///     dependencyResults: ["validate": ["value": 25]])
    /// let result = await ChargeCard().run(context)
    /// ```
    ///
    /// - Parameters:
    ///   - stepName: ``StepContext/stepName`` (also ``StepContext/templateStepName`` unless given).
    ///   - taskContext: ``StepContext/taskContext``, the task's `context`.
    ///   - dependencyResults: the `result` of each processed dependency, by step name; each becomes
    ///     a successful ``StepExecutionResult``.
    ///   - stepInputs: ``StepContext/stepInputs`` (a batch worker's cursor, for example).
    ///   - stepConfig: ``StepContext/stepConfig``, the step's `handler.initialization`.
    ///   - logger: ``StepContext/logger``; by default a logger with the step's metadata that
    ///     writes through the process's logging backend.
    public static func testing(
        stepName: String = "step", templateStepName: String? = nil,
        taskContext: JSONValue = .emptyObject, dependencyResults: [String: JSONValue] = [:],
        stepInputs: JSONValue = .null, stepConfig: JSONValue = .emptyObject,
        attempt: Int = 1, maxAttempts: Int = 3, checkpoint: JSONValue? = nil,
        namespace: String = "test", taskName: String = "test_task", taskVersion: String = "1.0.0",
        timeout: Duration = .seconds(30), logger: Logger? = nil
    ) -> StepContext {
        let now = Date()
        return StepContext(
            taskUUID: UUID(), stepUUID: UUID(), correlationID: UUID(), namespace: namespace, taskName: taskName,
            taskVersion: taskVersion, stepName: stepName, templateStepName: templateStepName,
            taskContext: taskContext, stepInputs: stepInputs, stepConfig: stepConfig,
            dependencyResults: dependencyResults.mapValues { result in
                .success(
                    stepUUID: UUID(), result: result, startedAt: now, completedAt: now, workerID: nil,
                    hostname: nil)
            },
            attempt: attempt, maxAttempts: maxAttempts, checkpoint: checkpoint, timeout: timeout, logger: logger)
    }
}
