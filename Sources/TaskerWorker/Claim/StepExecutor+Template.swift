import Logging
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

extension StepExecutor {
    /// Database errors in a row before `stepDefinition` gives up and throws.
    static let templateLookupAttempts = 3

    /// The template step `step` runs, looked up through the template registry's cache
    /// (`named_tasks.configuration`, read once per template), or nil when the template or the step
    /// is unknown (or the stored template is unreadable: `TaskTemplateRegistryError`), which fails
    /// the step with `handler_not_found`. A database error is no such answer: the lookup is tried
    /// again (`templateLookupAttempts` times, with backoff) and then thrown, so the caller can retry
    /// the step instead of failing it for good. Runs off the actor (it only reads `let`s).
    func stepDefinition(for step: HydratedStep) async throws -> StepDefinition? {
        var schedule = RetrySchedule(backoff: ReconnectBackoff(initial: .milliseconds(50), maximum: .seconds(1)))
        let metadata: Logger.Metadata = [
            "namespace": "\(step.namespace)", "task_name": "\(step.taskName)", "task_version": "\(step.taskVersion)",
        ]
        while true {
            do {
                let template = try await templates.template(namespace: step.namespace, name: step.taskName, version: step.taskVersion)
                return template?.steps.first { $0.name == step.templateStepName }
            } catch let error as TaskTemplateRegistryError {
                logger.error(
                    "cannot use the stored task template",
                    metadata: metadata.merging(
                        ["error": "\(error)"], uniquingKeysWith: { $1 }))
                return nil
            } catch {
                guard let delay = schedule.failed(error), schedule.failures < Self.templateLookupAttempts else {
                    logger.error(
                        "cannot load the task template; giving up for this attempt",
                        metadata: metadata.merging(
                            ["error": "\(error)", "attempts": "\(schedule.failures)"], uniquingKeysWith: { $1 }))
                    throw error
                }
                logger.warning(
                    "cannot load the task template; trying again",
                    metadata: metadata.merging(
                        ["error": "\(error)", "retry_in": "\(delay)"], uniquingKeysWith: { $1 }))
                try? await Task.sleep(for: delay)
            }
        }
    }
}
