import Testing
import TaskerWorker
import TaskerWorkerTesting
@testable import PaymentsHandlers

@Suite struct ChargeCardTests {
    /// The result as the test reads it.
    struct Charged: Decodable, Equatable {
        let charged: Int64
        let currency: String
    }

    @Test func chargesTheAmount() async throws {
        let context = StepContext.testing(taskContext: ["amount": 25, "currency": "EUR"])
        let result = await ChargeCard().run(context)
        #expect(try result.decodedResult(as: Charged.self) == Charged(charged: 25, currency: "EUR"))
    }
}
