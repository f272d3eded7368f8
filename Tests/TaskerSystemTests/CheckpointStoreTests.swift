import Foundation
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// `StepRepository.persistCheckpoint` says why a checkpoint was not stored with its own error
/// (`CheckpointError`), never a `PostgresError` for what is not a database failure.
@Suite("Checkpoint store", .timeLimit(.minutes(2)))
struct CheckpointStoreTests {
    @Test func aCheckpointIsStoredOnlyForAStepInProcessAndOnlyWhenItEncodes() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: PipelineRobustnessTests.yaml)
            let task = try await harness.createTask(steps: ["work"])
            try await harness.enqueue(task, "work")
            let step = task["work"]
            let yield = CheckpointYield(cursor: .int(7), itemsProcessed: 7)

            // Not claimed (not in process): refused as such, nothing stored.
            await #expect {
                try await StepRepository.persistCheckpoint(harness.admin, stepUUID: step, yield: yield)
            } throws: { error in
                guard case .notInProcess(let refused) = error as? CheckpointError else { return false }
                return refused == step
            }
            #expect(try await storedCheckpoint(harness, step) == nil)

            try await harness.admin.query("UPDATE tasker.workflow_steps SET in_process = true WHERE workflow_step_uuid = $1", [step])

            // A cursor with no JSON form: refused before the database, naming the step and the reason.
            await #expect {
                try await StepRepository.persistCheckpoint(
                    harness.admin, stepUUID: step, yield: CheckpointYield(cursor: .double(.nan), itemsProcessed: 1))
            } throws: { error in
                guard case .notEncodable(let refused, let reason) = error as? CheckpointError else { return false }
                return refused == step && reason.contains("NaN") && "\(error)".contains("cannot encode the checkpoint")
            }
            #expect(try await storedCheckpoint(harness, step) == nil)

            // In process: stored, with its history.
            let stored = try await StepRepository.persistCheckpoint(harness.admin, stepUUID: step, yield: yield)
            #expect(stored["cursor"] == .int(7))
            guard case .array(let history)? = stored["history"] else {
                Issue.record("no history in \(stored)")
                return
            }
            #expect(history.count == 1)
            #expect(try await storedCheckpoint(harness, step) == stored)
        }
    }

    private func storedCheckpoint(_ harness: PipelineHarness, _ step: UUID) async throws -> JSONValue? {
        try await harness.admin.query("SELECT checkpoint FROM tasker.workflow_steps WHERE workflow_step_uuid = $1", [step])
            .first?.decode("checkpoint", as: JSONValue?.self)
    }
}
