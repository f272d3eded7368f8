import Foundation
import TaskerExamples
import TaskerOrchestration
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Every example workflow in `config/tasks/examples/` reaches `complete` with the expected results
/// (`ExampleWorkflowCase`) through the companion orchestration and a real worker on PGMQ.
@Suite(.serialized) struct ExampleWorkflowTests {
    /// Runs one example task to a final state with one worker and one orchestration, then checks it.
    static func run(_ example: ExampleWorkflowCase) async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let worker = harness.startWorker()
            let orchestration = harness.startOrchestration()
            let created = try await orchestration.submit(OrchestrationHarness.request(example.name, example.context))
            let final = try await harness.waitForTask(created.taskUUID, in: ["complete", "error"])
            #expect(final == "complete", "\(example) ended \(final)")
            try await example.check(harness, created.taskUUID)
            try await orchestration.stop()
            try await worker.stop()
        }
    }

    @Test func linear() async throws { try await Self.run(.linear) }

    @Test func diamond() async throws { try await Self.run(.diamond) }

    @Test func tree() async throws { try await Self.run(.tree) }

    @Test func decisionCreatesOnlyTheChosenBranch() async throws {
        try await Self.run(.decisionAutoApproved)
        try await Self.run(.decisionManagerApproved)
    }

    @Test func batchCreatesCursorWorkersAndConverges() async throws { try await Self.run(.batch) }

    @Test func batchWithNoItemsRunsOneNoOpWorker() async throws { try await Self.run(.batchWithNoItems) }

    @Test func retry() async throws { try await Self.run(.retry) }
}
