import Testing
import TaskerWorker
import TaskerWorkerTesting
@testable import PaymentsHandlers

@Suite struct RouteChargeTests {
    @Test func largeChargesAreReviewed() async {
        for (charged, branch) in [(25, "send_receipt"), (5_000, "review_charge")] {
            let context = StepContext.testing(
                dependencyResults: ["charge_card": ["charged": .int(Int64(charged)), "currency": "EUR"]],
                stepConfig: ["review_threshold": 1000])
            let result = await RouteCharge().run(context)
            #expect(result.decisionOutcome == .createSteps([branch]))
        }
    }
}
