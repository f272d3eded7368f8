import Testing
import TaskerWorker
import TaskerWorkerTesting
@testable import PaymentsHandlers

@Suite struct RefundTests {
    struct Summary: Decodable { let processed: Int64 }

    @Test func planSplitsTheOrdersIntoBatches() async throws {
        let result = await PlanRefunds().run(.testing(taskContext: ["order_count": 250]))
        let plan = try #require(result.batchProcessingOutcome)
        #expect(plan.workerCount == 3)
        #expect(plan.cursorConfigs.map(\.endCursor) == [84, 167, 250])
    }

    @Test func aWorkerRefundsItsRange() async throws {
        let inputs = BatchWorkerInputs(
            cursor: CursorConfig(batchID: "batch_002", startCursor: 84, endCursor: 167, batchSize: 83),
            batchMetadata: .init(cursorField: "order_index", failureStrategy: "fail_fast"), isNoOp: false)
        let context = StepContext.testing(stepName: "refund_batch_002", stepInputs: try JSONValue(encoding: inputs))
        let result = await RefundBatch().run(context)
        #expect(try result.decodedResult(as: Summary.self).processed == 83)
    }
}
