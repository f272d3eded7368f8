import Foundation
import TaskerModel

/// A claimed step on its way to a handler (the dispatch channel's element).
public struct ClaimedStep: Sendable {
    public let message: StepMessage
    public let hydrated: HydratedStep
    /// The template step that says which handler runs, with its timeout and events; nil when the
    /// template or the step is missing (the step then fails with `handler_not_found`).
    public let definition: StepDefinition?
    /// Dependency results decoded as `StepExecutionResult`s.
    public let dependencyResults: [String: StepExecutionResult]
    /// `attempts` after the claim.
    public let attempts: Int
    public let claimedAt: ContinuousClock.Instant

    public init(
        message: StepMessage, hydrated: HydratedStep, definition: StepDefinition?,
        dependencyResults: [String: StepExecutionResult], attempts: Int, claimedAt: ContinuousClock.Instant = .now
    ) {
        self.message = message
        self.hydrated = hydrated
        self.definition = definition
        self.dependencyResults = dependencyResults
        self.attempts = attempts
        self.claimedAt = claimedAt
    }
}

/// A finished step on its way to the database (the completion channel's element).
public struct StepCompletion: Sendable {
    public let step: ClaimedStep
    public let result: StepExecutionResult

    public init(step: ClaimedStep, result: StepExecutionResult) {
        self.step = step
        self.result = result
    }
}
