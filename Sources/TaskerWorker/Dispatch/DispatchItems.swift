import Foundation
import TaskerHandlerSDK
import TaskerModel

/// A claimed step on its way to a handler (the dispatch channel's element).
package struct ClaimedStep: Sendable {
    package let message: StepMessage
    let hydrated: HydratedStep
    /// The template step that says which handler runs, with its timeout and events; nil when the
    /// template or the step is missing (the step then fails with `handler_not_found`).
    package let definition: StepDefinition?
    /// Dependency results decoded as `StepExecutionResult`s.
    package let dependencyResults: [String: StepExecutionResult]
    /// `attempts` after the claim.
    package let attempts: Int
    let claimedAt: ContinuousClock.Instant
    /// The step's spans (`tasker.step` and its phases); nil where no claim started one (tests).
    package let trace: StepTrace?

    package init(
        message: StepMessage, hydrated: HydratedStep, definition: StepDefinition?,
        dependencyResults: [String: StepExecutionResult], attempts: Int, claimedAt: ContinuousClock.Instant = .now,
        trace: StepTrace? = nil
    ) {
        self.message = message
        self.hydrated = hydrated
        self.definition = definition
        self.dependencyResults = dependencyResults
        self.attempts = attempts
        self.claimedAt = claimedAt
        self.trace = trace
    }
}

/// A finished step on its way to the database (the completion channel's element).
package struct StepCompletion: Sendable {
    package let step: ClaimedStep
    package let result: StepExecutionResult

    package init(step: ClaimedStep, result: StepExecutionResult) {
        self.step = step
        self.result = result
    }
}
