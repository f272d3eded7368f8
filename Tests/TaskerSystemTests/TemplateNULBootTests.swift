import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerWorker

/// A template holding a NUL character used to fail its registration (`jsonb` cannot store U+0000)
/// and with it the whole boot: no namespace was served. Now it is skipped at load and the worker
/// serves the others.
@Suite("Task templates: a NUL character does not stop the boot", .timeLimit(.minutes(2)))
struct TemplateNULBootTests {
    @Test func theWorkerStillServesTheOtherTemplates() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: HostileFixtures.validTemplate)
            try HostileFixtures.nulTemplate.write(
                toFile: harness.templateDirectory + "/nul.yaml",
                atomically: true, encoding: .utf8)
            let worker = harness.startWorker(.withBuiltIns(), configuration: harness.configuration())
            let task = try await harness.createTask(steps: ["only"])
            try await harness.enqueue(task, "only")
            try await harness.waitForState(task["only"], ["enqueued_for_orchestration"])
            try await worker.stop()
        }
    }
}
