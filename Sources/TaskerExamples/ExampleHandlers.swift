import Foundation
import TaskerModel
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

/// `linear_workflow`: square → add → multiply → verify.
enum LinearHandlers {
    static func register(into registry: HandlerRegistry) {
        registry.register("examples.linear.square") { context in
            let number = try context.input(as: NumberInput.self).number
            return try .success(encoding: StepValue(value: try ExampleValues.square(number)))
        }
        registry.register("examples.linear.add") { context in
            let square = try context.dependencyResult(of: "linear_square", as: StepValue.self).value
            let number = try context.input(as: NumberInput.self).number
            try ExampleValues.check(square, equals: try ExampleValues.square(number), "linear_square")
            let addend = try context.configuration(as: AddendConfig.self).addend
            return try .success(
                encoding: StepValue(
                    value: try ExampleValues.sum(square, addend, "linear_square + handler.initialization.addend")))
        }
        registry.register("examples.linear.multiply") { context in
            let sum = try context.dependencyResult(of: "linear_add", as: StepValue.self).value
            let factor = try context.configuration(as: FactorConfig.self).factor
            return try .success(
                encoding: StepValue(
                    value: try ExampleValues.product(sum, factor, "linear_add × handler.initialization.factor")))
        }
        registry.register("examples.linear.verify") { context in
            let number = try context.input(as: NumberInput.self).number
            let added = try ExampleValues.sum(
                try ExampleValues.square(number),
                try context.configuration(as: AddendConfig.self).addend,
                "context.number² + handler.initialization.addend")
            let expected = try ExampleValues.product(
                added, try context.configuration(as: FactorConfig.self).factor,
                "(context.number² + addend) × handler.initialization.factor")
            let product = try context.dependencyResult(of: "linear_multiply", as: StepValue.self).value
            try ExampleValues.check(product, equals: expected, "linear_multiply")
            return try .success(encoding: VerifiedValue(value: product))
        }
    }
}

/// `diamond_workflow`: start → (left, right) → merge.
enum DiamondHandlers {
    static func register(into registry: HandlerRegistry) {
        registry.register("examples.diamond.start") { context in
            let number = try context.input(as: NumberInput.self).number
            return try .success(encoding: StepValue(value: try ExampleValues.square(number)))
        }
        registry.register("examples.diamond.left") { context in
            let start = try context.dependencyResult(of: "diamond_start", as: StepValue.self).value
            return try .success(encoding: StepValue(value: try ExampleValues.sum(start, 1, "diamond_start + 1")))
        }
        registry.register("examples.diamond.right") { context in
            let start = try context.dependencyResult(of: "diamond_start", as: StepValue.self).value
            return try .success(encoding: StepValue(value: try ExampleValues.product(start, 2, "diamond_start × 2")))
        }
        registry.register("examples.diamond.merge") { context in
            let number = try context.input(as: NumberInput.self).number
            let sum = try ExampleValues.sum(
                try context.dependencyResult(of: "diamond_left", as: StepValue.self).value,
                try context.dependencyResult(of: "diamond_right", as: StepValue.self).value,
                "diamond_left + diamond_right")
            let expected = try ExampleValues.sum(
                try ExampleValues.product(3, try ExampleValues.square(number), "3 × context.number²"), 1,
                "3 × context.number² + 1")
            try ExampleValues.check(sum, equals: expected, "diamond_left + diamond_right")
            return try .success(encoding: VerifiedValue(value: sum))
        }
    }
}

/// `tree_workflow`: root → (left, right) → (left_a, left_b, right_a) → gather.
enum TreeHandlers {
    static func register(into registry: HandlerRegistry) {
        registry.register("examples.tree.root") { context in
            try .success(encoding: StepValue(value: try context.input(as: NumberInput.self).number))
        }
        registry.register("examples.tree.branch") { context in
            let root = try context.dependencyResult(of: "tree_root", as: StepValue.self).value
            let offset = try context.configuration(as: OffsetConfig.self).offset
            return try .success(
                encoding: StepValue(
                    value: try ExampleValues.sum(root, offset, "tree_root + handler.initialization.offset")))
        }
        registry.register("examples.tree.leaf") { context in
            let config = try context.configuration(as: LeafConfig.self)
            let value = try context.dependencyResult(of: config.parent, as: StepValue.self).value
            return try .success(
                encoding: StepValue(
                    value: try ExampleValues.product(value, config.factor, "\(config.parent) × handler.initialization.factor")))
        }
        registry.register("examples.tree.gather") { context in
            let number = try context.input(as: NumberInput.self).number
            var sum: Int64 = 0
            for leaf in ["tree_left_a", "tree_left_b", "tree_right_a"] {
                sum = try ExampleValues.sum(
                    sum, try context.dependencyResult(of: leaf, as: StepValue.self).value,
                    "sum of the leaves")
            }
            let left = try ExampleValues.product(5, try ExampleValues.sum(number, 1, "context.number + 1"), "5 × (context.number + 1)")
            let right = try ExampleValues.product(4, try ExampleValues.sum(number, 2, "context.number + 2"), "4 × (context.number + 2)")
            try ExampleValues.check(sum, equals: try ExampleValues.sum(left, right, "expected sum of the leaves"), "sum of the leaves")
            return try .success(encoding: VerifiedValue(value: sum))
        }
    }
}
