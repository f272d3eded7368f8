import TaskerHandlerSDK
import TaskerWorkerTesting
import Testing

@testable import PaymentsWorker

@Test func chargesAPositiveAmount() async {
    let context = StepContext.testing(taskContext: ["amount": 2500], stepConfig: ["currency": "EUR"])
    let result = await ChargeCard().run(context)
    #expect(result.result == ["charged": 2500, "currency": "EUR"])
}

@Test func refusesANegativeAmountForGood() async {
    let result = await ChargeCard().run(StepContext.testing(taskContext: ["amount": -1]))
    #expect(result.failure?.retryable == false)
}
