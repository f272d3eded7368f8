import Foundation
import TaskerModel

/// The task states of Tasker's task state machine (the `to_state` of `tasker.task_transitions`).
public enum TaskState: String, Sendable, Equatable, CaseIterable, Codable {
    case pending
    case initializing
    case enqueuingSteps = "enqueuing_steps"
    case stepsInProcess = "steps_in_process"
    case evaluatingResults = "evaluating_results"
    case waitingForDependencies = "waiting_for_dependencies"
    case waitingForRetry = "waiting_for_retry"
    case blockedByFailures = "blocked_by_failures"
    case complete
    case error
    case cancelled
    case resolvedManually = "resolved_manually"

    /// Whether the task can never move again on its own.
    var isTerminal: Bool {
        switch self {
        case .complete, .error, .cancelled, .resolvedManually: return true
        default: return false
        }
    }
}

/// The workflow step states (the `to_state` of `tasker.workflow_step_transitions`).
public enum StepState: String, Sendable, Equatable, CaseIterable, Codable {
    case pending
    case enqueued
    case inProgress = "in_progress"
    case enqueuedForOrchestration = "enqueued_for_orchestration"
    case enqueuedAsErrorForOrchestration = "enqueued_as_error_for_orchestration"
    case waitingForRetry = "waiting_for_retry"
    case complete
    case error
    case cancelled
    case resolvedManually = "resolved_manually"
}

/// The events that move a task (upstream `TaskEvent`). The transition metadata records the event as
/// Rust's `Debug` rendering, e.g. `StepCompleted(0198…)` or `PermanentFailure("…")`.
enum TaskEvent: Sendable, Equatable {
    case start
    case readyStepsFound(Int)
    case noStepsFound
    case noDependenciesReady
    case dependenciesReady
    case stepsEnqueued([UUID])
    case stepCompleted(UUID)
    case allStepsCompleted
    case allStepsSuccessful
    case permanentFailure(String)
    case giveUp
    case retryReady
    /// The task API's `DELETE /v1/tasks/{uuid}`.
    case cancel
    /// `error → pending`: an operator's action on a step (`PATCH /v1/tasks/{uuid}/workflow_steps/{step}`)
    /// let a failed task run again (upstream `TaskEvent::Reset`, the only way out of `error`).
    case reset

    /// Rust's `{:?}` of the event, as stored in `metadata.event`.
    var debugRendering: String {
        switch self {
        case .start: return "Start"
        case .readyStepsFound(let count): return "ReadyStepsFound(\(count))"
        case .noStepsFound: return "NoStepsFound"
        case .noDependenciesReady: return "NoDependenciesReady"
        case .dependenciesReady: return "DependenciesReady"
        case .stepsEnqueued(let steps):
            return "StepsEnqueued([" + steps.map { $0.uuidString.lowercased() }.joined(separator: ", ") + "])"
        case .stepCompleted(let step): return "StepCompleted(\(step.uuidString.lowercased()))"
        case .allStepsCompleted: return "AllStepsCompleted"
        case .allStepsSuccessful: return "AllStepsSuccessful"
        case .permanentFailure(let message): return "PermanentFailure(\(Self.rustDebugString(message)))"
        case .giveUp: return "GiveUp"
        case .retryReady: return "RetryReady"
        case .cancel: return "Cancel"
        case .reset: return "Reset"
        }
    }

    /// Rust's `Debug` of a `String`: quoted, with `"`, `\` and control characters escaped.
    static func rustDebugString(_ text: String) -> String {
        "\""
            + StringEscaping.escaped(text, quoting: true, isControl: { $0.value < 0x20 || $0.value == 0x7f }) {
                "\\u{\(String($0.value, radix: 16))}"
            } + "\""
    }
}

/// The events orchestration writes on steps (upstream `StepEvent`, serde `tag="type",content="data"`);
/// the transition metadata holds the event's JSON as a string.
enum StepEvent: Sendable, Equatable {
    case enqueue
    case retry
    /// `Complete` with the step's `results` blob as data.
    case complete(resultsJSON: String)
    case fail(String)
    case waitForRetry(String)
    /// The task API cancelled the step's task before a worker claimed the step.
    case cancel
    /// An operator's `reset_for_retry`: `error → pending`, its attempts counted from zero again.
    case resetForRetry
    /// An operator's `resolve_manually`: `→ resolved_manually`, without results.
    case resolveManually
    /// An operator's `complete_manually`: `→ complete` with the results the operator gave (a
    /// `StepExecutionResult` JSON document).
    case completeManually(resultsJSON: String)

    /// The serde JSON of the event.
    public func jsonString() -> String {
        switch self {
        case .enqueue: return #"{"type":"Enqueue"}"#
        case .retry: return #"{"type":"Retry"}"#
        case .cancel: return #"{"type":"Cancel"}"#
        case .resetForRetry: return #"{"type":"ResetForRetry"}"#
        case .resolveManually: return #"{"type":"ResolveManually"}"#
        case .completeManually(let results): return #"{"type":"CompleteManually","data":"# + results + "}"
        case .complete(let results): return #"{"type":"Complete","data":"# + results + "}"
        case .fail(let message): return #"{"type":"Fail","data":"# + Self.jsonString(message) + "}"
        case .waitForRetry(let message): return #"{"type":"WaitForRetry","data":"# + Self.jsonString(message) + "}"
        }
    }

    /// A JSON string literal, as `JSONEncoder` writes it without escaping `/` (serde's escaping).
    static func jsonString(_ text: String) -> String {
        var writer = JSONWriter(sortedKeys: false, escapeSlashes: false)
        writer.string(text)
        return writer.text
    }
}
