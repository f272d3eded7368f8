import Foundation
import TaskerWorker
import TaskerModel

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

/// `linear_workflow`: square → add → multiply → verify.
enum LinearHandlers {
    static func register(into registry: HandlerRegistry) {
        registry.register("examples.linear.square") { context in
            let number = try ExampleValues.contextInt(context, "number")
            return .success(["value": .int(try ExampleValues.square(number))])
        }
        registry.register("examples.linear.add") { context in
            let square = try ExampleValues.dependencyValue(context, "linear_square")
            let number = try ExampleValues.contextInt(context, "number")
            try ExampleValues.check(square, equals: try ExampleValues.square(number), "linear_square")
            let addend = try ExampleValues.configInt(context, "addend")
            return .success(["value": .int(try ExampleValues.sum(square, addend, "linear_square + handler.initialization.addend"))])
        }
        registry.register("examples.linear.multiply") { context in
            let sum = try ExampleValues.dependencyValue(context, "linear_add")
            let factor = try ExampleValues.configInt(context, "factor")
            return .success(["value": .int(try ExampleValues.product(sum, factor, "linear_add × handler.initialization.factor"))])
        }
        registry.register("examples.linear.verify") { context in
            let number = try ExampleValues.contextInt(context, "number")
            let added = try ExampleValues.sum(try ExampleValues.square(number), try ExampleValues.configInt(context, "addend"),
                                              "context.number² + handler.initialization.addend")
            let expected = try ExampleValues.product(added, try ExampleValues.configInt(context, "factor"),
                                                     "(context.number² + addend) × handler.initialization.factor")
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
            return .success(["value": .int(try ExampleValues.square(number))])
        }
        registry.register("examples.diamond.left") { context in
            let start = try ExampleValues.dependencyValue(context, "diamond_start")
            return .success(["value": .int(try ExampleValues.sum(start, 1, "diamond_start + 1"))])
        }
        registry.register("examples.diamond.right") { context in
            let start = try ExampleValues.dependencyValue(context, "diamond_start")
            return .success(["value": .int(try ExampleValues.product(start, 2, "diamond_start × 2"))])
        }
        registry.register("examples.diamond.merge") { context in
            let number = try ExampleValues.contextInt(context, "number")
            let sum = try ExampleValues.sum(try ExampleValues.dependencyValue(context, "diamond_left"),
                                            try ExampleValues.dependencyValue(context, "diamond_right"),
                                            "diamond_left + diamond_right")
            let expected = try ExampleValues.sum(
                try ExampleValues.product(3, try ExampleValues.square(number), "3 × context.number²"), 1,
                "3 × context.number² + 1")
            try ExampleValues.check(sum, equals: expected, "diamond_left + diamond_right")
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
            let offset = try ExampleValues.configInt(context, "offset")
            return .success(["value": .int(try ExampleValues.sum(root, offset, "tree_root + handler.initialization.offset"))])
        }
        registry.register("examples.tree.leaf") { context in
            guard let parent = context.config("parent")?.stringValue else {
                throw StepFailure.permanent("handler.initialization.parent is missing", errorType: "configuration_error")
            }
            let value = try ExampleValues.dependencyValue(context, parent)
            let factor = try ExampleValues.configInt(context, "factor")
            return .success(["value": .int(try ExampleValues.product(value, factor, "\(parent) × handler.initialization.factor"))])
        }
        registry.register("examples.tree.gather") { context in
            let number = try ExampleValues.contextInt(context, "number")
            var sum: Int64 = 0
            for leaf in ["tree_left_a", "tree_left_b", "tree_right_a"] {
                sum = try ExampleValues.sum(sum, try ExampleValues.dependencyValue(context, leaf), "sum of the leaves")
            }
            let left = try ExampleValues.product(5, try ExampleValues.sum(number, 1, "context.number + 1"), "5 × (context.number + 1)")
            let right = try ExampleValues.product(4, try ExampleValues.sum(number, 2, "context.number + 2"), "4 × (context.number + 2)")
            try ExampleValues.check(sum, equals: try ExampleValues.sum(left, right, "expected sum of the leaves"), "sum of the leaves")
            return .success(["value": .int(sum), "verified": true])
        }
    }
}
