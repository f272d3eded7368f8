import Foundation
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerWorker

/// Claims per poll: the messages of one poll read are hydrated and claimed in one transaction, each
/// still checked on its own; a batch that fails is claimed message by message, with nothing lost.
@Suite("Claim batching", .timeLimit(.minutes(2)))
struct ClaimBatchTests {
    static let yaml = """
        name: claims
        namespace_name: claiming
        version: 1.0.0
        steps:
          - name: one
            handler:
              callable: tasker.noop
        """

    @Test func aBatchClaimsEachClaimableStepAndReportsTheOthers() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            // The second step was claimed elsewhere already.
            let (tasks, messages, requests) = try await harness.claimRequestsWithOneTakenElsewhere(step: "one")
            let attempts = try await StepRepository.hydrateAndClaim(harness.admin, requests, timeout: .seconds(5))
            #expect(attempts.map(\.claim) == [.claimed(attempts: 1), .notClaimable, .claimed(attempts: 1)])
            let states = try attempts.map { try $0.hydrated.get()?.currentState }
            #expect(states == ["enqueued", "in_progress", "enqueued"])
            #expect(try await harness.state(tasks[0]["one"]) == "in_progress")
            #expect(try await harness.state(tasks[2]["one"]) == "in_progress")
            // Claimed messages are archived; the other stays queued for its owner to settle.
            #expect(try await harness.queuedIDs() == [messages[1]])
        }
    }

    /// A PollingOnly worker started over a backlog claims the read's messages together.
    @Test func aPollReadIsClaimedInOneTransaction() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let tasks = try await harness.createSingleStepTasks(count: 12, step: "one")
            try await harness.enqueueBatch(tasks, "one")
            let worker = harness.startWorker(HandlerRegistry.withBuiltIns(), configuration: harness.configuration(mode: .pollingOnly))
            #expect(await harness.waitForAllSteps(["enqueued_for_orchestration"], timeout: .seconds(30)))
            try await worker.stop()
            #expect(worker.daemon.statistics.snapshot.claimsBatched > 0)
            for task in tasks {
                #expect(try await harness.transitions(task["one"]).filter { $0.to == "in_progress" }.count == 1)
            }
        }
    }

    /// One step of the read is locked by someone else past the claim timeout: the batch fails as a
    /// whole, the other steps are then claimed one by one, and the locked one once it is free.
    @Test func aFailedBatchIsClaimedMessageByMessage() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let tasks = try await harness.createSingleStepTasks(count: 4, step: "one")
            try await harness.enqueueBatch(tasks, "one")
            let locker = try await db.connect(applicationName: "tasker-test-locker")
            try await locker.query("BEGIN")
            try await locker.query(
                """
                SELECT 1 FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1 AND most_recent FOR UPDATE
                """, [tasks[2]["one"]])
            var configuration = harness.configuration(mode: .pollingOnly)
            configuration.worker.eventSystems.worker.timing.claimTimeoutSeconds = 1
            configuration.worker.eventSystems.worker.timing.visibilityTimeoutSeconds = 1
            configuration.worker.eventSystems.worker.metadata.fallbackPoller.visibilityTimeoutSeconds = 1
            let worker = harness.startWorker(HandlerRegistry.withBuiltIns(), configuration: configuration)
            for index in [0, 1, 3] {
                try await harness.waitForState(tasks[index]["one"], ["enqueued_for_orchestration"], timeout: .seconds(30))
            }
            #expect(try await harness.state(tasks[2]["one"]) == "enqueued")
            try await locker.query("ROLLBACK")
            try await harness.waitForState(tasks[2]["one"], ["enqueued_for_orchestration"], timeout: .seconds(30))
            try await worker.stop()
            for task in tasks {
                #expect(try await harness.transitions(task["one"]).filter { $0.to == "in_progress" }.count == 1)
            }
            await locker.close()
        }
    }
}
