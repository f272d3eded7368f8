import Foundation
import Logging
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// `StepContext.logger` in a real worker: a handler's own lines carry its step's metadata.
@Suite("HandlerSDKLoggerTests", .timeLimit(.minutes(2)))
struct HandlerSDKLoggerTests {
    @Test func aHandlersLinesCarryItsStepsMetadata() async throws {
        WorkerLogging.bootstrap()
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(
                db,
                yaml: """
                    name: logging_handler
                    namespace_name: logging_handler
                    version: 1.0.0
                    steps:
                      - name: charge
                        handler: { callable: test.logs }
                    """)
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.logs") { context in
                context.logger.info("charging the card", metadata: ["amount": "25"])
                return .success(.emptyObject)
            }
            let daemon = WorkerDaemon(
                configuration: harness.configuration(mode: .hybrid), handlers: handlers,
                templateLoader: TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": harness.templateDirectory]))
            let capture = LogCapture()
            let override = WorkerLogging.Override(output: capture.output, format: .json, level: .info, metadata: [:])
            let task = Task { try await WorkerLogging.withOverride(override) { try await daemon.run() } }
            let worker = PipelineHarness.RunningWorker(daemon: daemon, task: task)
            try await harness.waitForWorkersReady(1, mode: .hybrid)
            let seeded = try await harness.createTask(steps: ["charge"])
            try await harness.enqueue(seeded, "charge")
            try await harness.waitForState(seeded["charge"], ["enqueued_for_orchestration"])
            try await worker.stop()

            let line = try #require(
                try capture.objects().first { $0["message"] as? String == "charging the card" },
                "\(capture.all)")
            #expect((line["step_uuid"] as? String)?.uppercased() == seeded["charge"].uuidString, "\(line)")
            #expect((line["task_uuid"] as? String)?.uppercased() == seeded.taskUUID.uuidString)
            #expect((line["correlation_id"] as? String)?.uppercased() == seeded.correlationID.uuidString)
            #expect(line["handler"] as? String == "test.logs")
            #expect(line["step_name"] as? String == "charge")
            #expect(line["namespace"] as? String == "logging_handler")
            #expect(line["amount"] as? String == "25")
        }
    }
}
