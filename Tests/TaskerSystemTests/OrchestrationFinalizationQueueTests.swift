import Foundation
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration

/// `orchestration_task_finalizations`: upstream's message (`{"task_uuid": …}`) finalizes the task;
/// hostile messages are archived once, never re-read.
@Suite(.serialized) struct OrchestrationFinalizationQueueTests {
    static let queue = QueueNames.taskFinalizations

    static func send(_ harness: OrchestrationHarness, _ body: String) async throws {
        try await harness.admin.query("SELECT tasker.pgmq_send_with_notify($1::text, $2::jsonb, 0) AS id", [queue, body])
    }

    static func count(_ harness: OrchestrationHarness, _ table: String) async throws -> Int {
        try await harness.admin.query("SELECT count(*)::integer AS n FROM pgmq.\(table)_\(queue)")[0].decode("n")
    }

    @Test func validMalformedAndUnknownTaskMessagesAreEachHandledOnceAndArchived() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            // steps_in_process, its first step enqueued with no worker: only a finalization moves it.
            let task = try await harness.submittedTask("linear_workflow", ["number": 7]).taskUUID
            #expect(try await harness.taskState(task) == "steps_in_process")
            try await Self.send(harness, #"{"task_uuid": "\#(task.uuidString.lowercased())", "extra": true}"#)
            for hostile in [
                #"{"task_uuid": "not-a-uuid"}"#, #"{"task_uuid": 42}"#, #"{"other": 1}"#, "[1, 2]", #""text""#, "null",
                #"{"task_uuid": "\#(UUID().uuidString)"}"#,
            ] {
                try await Self.send(harness, hostile)
            }
            let orchestration = harness.startOrchestration(visibilityTimeoutSeconds: 1)
            let deadline = ContinuousClock.now.advanced(by: .seconds(15))
            while try await Self.count(harness, "q") > 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            // Longer than the visibility timeout: nothing comes back to be read again.
            try await Task.sleep(for: .milliseconds(1500))
            let statistics = orchestration.service.statistics
            try await orchestration.stop()
            #expect(try await Self.count(harness, "q") == 0)
            #expect(try await Self.count(harness, "a") == 8)
            #expect(statistics.finalizationsProcessed == 1)
            #expect(statistics.poisonMessages == 7)
            // upstream's finalizer on a task whose steps are still out: steps_in_process → evaluating_results.
            #expect(try await harness.taskTransitions(task).suffix(2) == ["steps_in_process", "evaluating_results"])
            let readCounts: [Int] = try await harness.admin.query("SELECT read_ct FROM pgmq.a_\(Self.queue)").map {
                try $0.decode("read_ct")
            }
            #expect(readCounts.allSatisfy { $0 == 1 }, "read counts \(readCounts)")
        }
    }
}
