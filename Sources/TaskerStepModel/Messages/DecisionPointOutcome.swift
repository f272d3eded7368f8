import Foundation
import TaskerText

/// A decision step's outcome, read by orchestration from `result.decision_point_outcome`
/// (only when `status` is `completed`):
/// `{"type":"create_steps","step_names":[..]}` or `{"type":"no_branches"}`.
public enum DecisionPointOutcome: Codable, Sendable, Equatable {
    /// No downstream steps are created.
    case noBranches
    /// Create these steps (they must be declared in the template).
    case createSteps([String])

    /// The step names to create (empty for ``noBranches``).
    public var stepNames: [String] {
        if case .createSteps(let names) = self { return names }
        return []
    }

    /// Whether orchestration will create steps.
    public var requiresStepCreation: Bool {
        if case .createSteps = self { return true }
        return false
    }

    /// The outcome as JSON.
    public var jsonValue: JSONValue {
        switch self {
        case .noBranches:
            return .object(["type": .string("no_branches")])
        case .createSteps(let names):
            return .object(["type": .string("create_steps"), "step_names": .array(names.map(JSONValue.string))])
        }
    }

    /// The outcome in a result's `result.decision_point_outcome`, if it parses.
    public static func from(_ result: StepExecutionResult) -> DecisionPointOutcome? {
        guard let value = result.result["decision_point_outcome"] else { return nil }
        return try? value.decode(DecisionPointOutcome.self)
    }

    enum CodingKeys: String, CodingKey {
        case type
        case stepNames = "step_names"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "no_branches":
            self = .noBranches
        case "create_steps":
            self = .createSteps(try container.decode([String].self, forKey: .stepNames))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container, debugDescription: "unknown decision outcome type \(type)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .noBranches:
            try container.encode("no_branches", forKey: .type)
        case .createSteps(let names):
            try container.encode("create_steps", forKey: .type)
            try container.encode(names, forKey: .stepNames)
        }
    }
}
