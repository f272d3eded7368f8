import Foundation
import TaskerModel
import TaskerWorker
import Testing

/// The handler from the README, kept compiling and behaving as documented.
private struct ChargeCard: StepHandler {
    func call(_ context: StepContext) async throws -> StepHandlerResult {
        guard let amount = try context.input("amount", as: Int.self), amount > 0 else {
            return .failure(message: "amount must be a positive integer", retryable: false)
        }
        return .success(["charged": .int(Int64(amount)), "currency": "EUR"])
    }
}

@Suite("README handler example")
struct ReadmeExampleTests {
    static func context(_ taskContext: JSONValue) -> StepContext {
        StepContext(
            taskUUID: UUID(), stepUUID: UUID(), correlationID: UUID(), namespace: "payments",
            taskName: "checkout", taskVersion: "1.0.0", stepName: "charge", templateStepName: "charge",
            taskContext: taskContext, stepInputs: .null, stepConfig: [:], dependencyResults: [:])
    }

    @Test func chargesAPositiveAmountAndRejectsTheRest() async throws {
        let handlers = HandlerRegistry.withBuiltIns()
        handlers.register("payments.charge_card", ChargeCard())
        let handler = try #require(handlers.handler(for: "payments.charge_card"))
        let charged = try await handler.call(Self.context(["amount": 25]))
        #expect(charged.result == ["charged": 25, "currency": "EUR"])
        let rejected = try await handler.call(Self.context(["amount": -1]))
        #expect(rejected.failure?.retryable == false)
        #expect(handlers.contains("tasker.noop"))
    }
}
