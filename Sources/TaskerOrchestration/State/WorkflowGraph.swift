import Foundation
import TaskerModel

/// The shape of a template as orchestration reads it: which steps exist when a task is created,
/// and which steps a decision point may create later (upstream `TaskTemplate::initial_step_set`,
/// `graphs_from_decision`, `deferred_convergence_steps`).
struct WorkflowGraph: Sendable {
    public let template: TaskTemplate
    private let decisions: Set<String>

    public init(_ template: TaskTemplate) {
        self.template = template
        self.decisions = Set(template.steps.filter { $0.type == .decision }.map(\.name))
    }

    /// The steps created with the task. Without decision points: every step but batch worker
    /// templates and deferred convergence steps. With decision points: every step that does not
    /// descend from one, batch worker templates excluded.
    var initialSteps: [StepDefinition] {
        if decisions.isEmpty {
            return template.steps.filter(\.isCreatedAtInitialization)
        }
        return template.steps.filter { step in
            step.type != .batchWorker && !descendsFromDecision(step.name, visited: [])
        }
    }

    /// Deferred convergence steps (created when one of their dependencies is created).
    var deferredConvergenceSteps: [StepDefinition] {
        template.steps.filter { $0.type == .deferredConvergence }
    }

    private func descendsFromDecision(_ name: String, visited: Set<String>) -> Bool {
        guard let step = template.step(named: name), !visited.contains(name) else { return false }
        for dependency in step.dependencies {
            if decisions.contains(dependency) { return true }
            if descendsFromDecision(dependency, visited: visited.union([name])) { return true }
        }
        return false
    }

    /// The steps reachable from a decision point's children, stopping at (and reporting) further
    /// decision points.
    func reachable(fromDecision decision: String) -> (steps: Set<String>, exitDecisions: Set<String>) {
        var steps: Set<String> = []
        var exits: Set<String> = []
        var frontier = template.steps.filter { $0.dependencies.contains(decision) }.map(\.name)
        while let name = frontier.popLast() {
            if steps.contains(name) { continue }
            if decisions.contains(name) && name != decision {
                exits.insert(name)
                continue
            }
            steps.insert(name)
            frontier += template.steps.filter { $0.dependencies.contains(name) }.map(\.name)
        }
        return (steps, exits)
    }

    /// The steps a decision's `create_steps` outcome creates: the requested ones (each must be
    /// reachable from the decision), the further decision points of that graph, and every deferred
    /// convergence step with a dependency among them.
    ///
    /// - Throws: ``OrchestrationError/invalidDecisionOutcome(step:reason:)`` for a step the
    ///   template does not place below the decision.
    func stepsToCreate(decision: String, requested: [String], decisionStep: UUID) throws -> [StepDefinition] {
        let graph = reachable(fromDecision: decision)
        for name in requested where !graph.steps.contains(name) {
            throw OrchestrationError.invalidDecisionOutcome(
                step: decisionStep, reason: "step '\(name)' is not a valid descendant of decision point '\(decision)'")
        }
        var names = Set(requested)
        if !requested.isEmpty { names.formUnion(graph.exitDecisions) }
        for convergence in deferredConvergenceSteps where convergence.dependencies.contains(where: names.contains) {
            names.insert(convergence.name)
        }
        return template.steps.filter { names.contains($0.name) }
    }
}
