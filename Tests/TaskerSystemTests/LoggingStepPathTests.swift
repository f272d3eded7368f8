import Foundation
import Logging
import Synchronization
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// A real run's step lines: the worker's log handler on the step path (the handler itself:
/// `LoggingTests` in TaskerWorkerTests).
@Suite("Logging on the step path", .timeLimit(.minutes(2)))
struct LoggingStepPathTests {
    @Test func stepPathLinesCarryTheStepAndWorkerIDs() async throws {
        WorkerLogging.bootstrap()
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(
                db,
                yaml: """
                    name: logged
                    namespace_name: logged
                    version: 1.0.0
                    steps:
                      - name: ok
                        handler: { callable: tasker.noop }
                      - name: broken
                        handler: { callable: test.throws }
                    """)
            let handlers = HandlerRegistry.withBuiltIns()
            struct Boom: Error {}
            handlers.register("test.throws") { _ in throw Boom() }
            let daemon = WorkerDaemon(
                configuration: harness.configuration(mode: .hybrid), handlers: handlers,
                templateLoader: TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": harness.templateDirectory]))
            let capture = LogCapture()
            let override = WorkerLogging.Override(
                output: capture.output, format: .json, level: .info,
                metadata: ["worker_id": "\(daemon.identity.publicID)"])
            let task = Task { try await WorkerLogging.withOverride(override) { try await daemon.run() } }
            let worker = PipelineHarness.RunningWorker(daemon: daemon, task: task)
            try await harness.waitForWorkersReady(1, mode: .hybrid)
            let seeded = try await harness.createTask(steps: ["ok", "broken"])
            try await harness.enqueue(seeded, "ok")
            try await harness.enqueue(seeded, "broken")
            try await harness.waitForState(seeded["ok"], ["enqueued_for_orchestration"])
            try await harness.waitForState(seeded["broken"], ["enqueued_as_error_for_orchestration"])
            try await waitUntil { capture.all.contains { $0.contains(#""message":"step failed""#) } }
            try await worker.stop()

            let lines = try capture.objects()
            #expect(!lines.isEmpty)
            for line in lines {
                #expect(line["worker_id"] as? String == daemon.identity.publicID, "\(line)")
                #expect(line["timestamp"] is String && line["level"] is String && line["label"] is String)
            }
            let broken = seeded["broken"].uuidString
            let stepLines = lines.filter { ($0["step_uuid"] as? String)?.uppercased() == broken }
            #expect(stepLines.contains { $0["message"] as? String == "handler failed" })
            #expect(stepLines.contains { $0["message"] as? String == "step failed" })
            for line in stepLines {
                #expect((line["task_uuid"] as? String)?.uppercased() == seeded.taskUUID.uuidString)
                #expect((line["correlation_id"] as? String)?.uppercased() == seeded.correlationID.uuidString)
                #expect(line["handler"] as? String == "test.throws", "\(line)")
            }
            // No info line for a successful step.
            let ok = seeded["ok"].uuidString
            #expect(!lines.contains { ($0["step_uuid"] as? String)?.uppercased() == ok }, "\(lines)")
            // Shutdown is logged at info.
            #expect(lines.contains { ($0["message"] as? String)?.contains("stopped") == true })
        }
    }
}
