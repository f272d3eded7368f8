import Foundation
import TaskerWorker

/// Step handlers of the example workflows in `config/tasks/examples/` (namespace `examples`).
/// Each does a small real computation and checks what its dependencies computed, so a wrong
/// result anywhere fails the workflow.
public enum ExampleHandlers {
    /// Registers every example handler (`examples.<workflow>.<step>`).
    public static func register(into registry: HandlerRegistry) {
        LinearHandlers.register(into: registry)
        DiamondHandlers.register(into: registry)
        TreeHandlers.register(into: registry)
        DecisionHandlers.register(into: registry)
        BatchHandlers.register(into: registry)
        RetryHandlers.register(into: registry)
    }

    /// The namespace of the example templates.
    public static let namespace = "examples"
    /// The version of every example template.
    public static let version = "1.0.0"
}

/// Reading numbers from contexts and results, failing the step permanently when they are missing.
enum ExampleValues {
    static func contextInt(_ context: StepContext, _ key: String) throws -> Int64 {
        guard let value = context.input(key)?.intValue else {
            throw StepFailure.permanent("context.\(key) must be an integer", errorType: "validation_error")
        }
        return Int64(value)
    }

    static func configInt(_ context: StepContext, _ key: String) throws -> Int64 {
        guard let value = context.config(key)?.intValue else {
            throw StepFailure.permanent("handler.initialization.\(key) must be an integer", errorType: "configuration_error")
        }
        return Int64(value)
    }

    /// `result.value` of a dependency.
    static func dependencyValue(_ context: StepContext, _ step: String) throws -> Int64 {
        guard let value = context.dependencyField(step, "value")?.intValue else {
            throw StepFailure.permanent("dependency \(step) has no integer result.value", errorType: "dependency_error")
        }
        return Int64(value)
    }

    /// Fails permanently unless `actual == expected`.
    static func check(_ actual: Int64, equals expected: Int64, _ what: String) throws {
        guard actual == expected else {
            throw StepFailure.permanent("\(what): expected \(expected), got \(actual)", errorType: "verification_error")
        }
    }
}

/// `linear_workflow`: square → add → multiply → verify.
enum LinearHandlers {
    static func register(into registry: HandlerRegistry) {
        registry.register("examples.linear.square") { context in
            let number = try ExampleValues.contextInt(context, "number")
            return .success(["value": .int(number * number)])
        }
        registry.register("examples.linear.add") { context in
            let square = try ExampleValues.dependencyValue(context, "linear_square")
            let number = try ExampleValues.contextInt(context, "number")
            try ExampleValues.check(square, equals: number * number, "linear_square")
            return .success(["value": .int(square + (try ExampleValues.configInt(context, "addend")))])
        }
        registry.register("examples.linear.multiply") { context in
            let sum = try ExampleValues.dependencyValue(context, "linear_add")
            return .success(["value": .int(sum * (try ExampleValues.configInt(context, "factor")))])
        }
        registry.register("examples.linear.verify") { context in
            let number = try ExampleValues.contextInt(context, "number")
            let expected = (number * number + (try ExampleValues.configInt(context, "addend")))
                * (try ExampleValues.configInt(context, "factor"))
            let product = try ExampleValues.dependencyValue(context, "linear_multiply")
            try ExampleValues.check(product, equals: expected, "linear_multiply")
            return .success(["value": .int(product), "verified": true])
        }
    }
}

/// `diamond_workflow`: start → (left, right) → merge.
enum DiamondHandlers {
    static func register(into registry: HandlerRegistry) {
        registry.register("examples.diamond.start") { context in
            let number = try ExampleValues.contextInt(context, "number")
            return .success(["value": .int(number * number)])
        }
        registry.register("examples.diamond.left") { context in
            .success(["value": .int(try ExampleValues.dependencyValue(context, "diamond_start") + 1)])
        }
        registry.register("examples.diamond.right") { context in
            .success(["value": .int(try ExampleValues.dependencyValue(context, "diamond_start") * 2)])
        }
        registry.register("examples.diamond.merge") { context in
            let number = try ExampleValues.contextInt(context, "number")
            let sum = try ExampleValues.dependencyValue(context, "diamond_left")
                + (try ExampleValues.dependencyValue(context, "diamond_right"))
            try ExampleValues.check(sum, equals: 3 * number * number + 1, "diamond_left + diamond_right")
            return .success(["value": .int(sum), "verified": true])
        }
    }
}

/// `tree_workflow`: root → (left, right) → (left_a, left_b, right_a) → gather.
enum TreeHandlers {
    static func register(into registry: HandlerRegistry) {
        registry.register("examples.tree.root") { context in
            .success(["value": .int(try ExampleValues.contextInt(context, "number"))])
        }
        registry.register("examples.tree.branch") { context in
            let root = try ExampleValues.dependencyValue(context, "tree_root")
            return .success(["value": .int(root + (try ExampleValues.configInt(context, "offset")))])
        }
        registry.register("examples.tree.leaf") { context in
            guard let parent = context.config("parent")?.stringValue else {
                throw StepFailure.permanent("handler.initialization.parent is missing", errorType: "configuration_error")
            }
            let value = try ExampleValues.dependencyValue(context, parent)
            return .success(["value": .int(value * (try ExampleValues.configInt(context, "factor")))])
        }
        registry.register("examples.tree.gather") { context in
            let number = try ExampleValues.contextInt(context, "number")
            var sum: Int64 = 0
            for leaf in ["tree_left_a", "tree_left_b", "tree_right_a"] {
                sum += try ExampleValues.dependencyValue(context, leaf)
            }
            try ExampleValues.check(sum, equals: 5 * (number + 1) + 4 * (number + 2), "sum of the leaves")
            return .success(["value": .int(sum), "verified": true])
        }
    }
}
