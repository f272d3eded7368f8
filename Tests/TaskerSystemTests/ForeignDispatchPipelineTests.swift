import Foundation
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// The FFI dispatch channel in a real worker (real PostgreSQL): a foreign "runtime" (a Swift task
/// calling the channel's poll/complete API, as the C ABI does) completes steps whose callable has
/// no Swift handler, beside Swift handlers; timeouts, checkpoint yields, starvation and shutdown.
@Suite("FFI dispatch channel in the pipeline", .timeLimit(.minutes(2)))
struct ForeignDispatchPipelineTests {
    static let yaml = """
        name: foreign
        namespace_name: foreign
        version: 1.0.0
        steps:
          - name: swift_step
            handler: { callable: tasker.echo }
          - name: py_step
            handler: { callable: python.double, initialization: { factor: 2 } }
          - name: py_other
            handler: { callable: python.other }
        """

    static func configuration(
        _ harness: PipelineHarness, completionTimeoutMs: Int = 30_000, starvationMs: Int = 10_000
    )
        -> TaskerConfiguration
    {
        var configuration = harness.configuration(mode: .pollingOnly)
        configuration.worker.mpscChannels.ffiDispatch.completionTimeoutMs = completionTimeoutMs
        configuration.worker.mpscChannels.ffiDispatch.starvationWarningThresholdMs = starvationMs
        return configuration
    }

    static func channel(_ configuration: TaskerConfiguration) -> ForeignDispatchChannel {
        ForeignDispatchChannel(configuration: configuration.worker.mpscChannels.ffiDispatch)
    }

    /// A worker on a fresh test database (polling only) with a foreign channel attached.
    static func withForeignWorker(
        completionTimeoutMs: Int = 30_000, starvationMs: Int = 10_000,
        configure: (inout TaskerConfiguration) -> Void = { _ in },
        _ body: (PipelineHarness, ForeignDispatchChannel, PipelineHarness.RunningWorker) async throws -> Void
    ) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            var configuration = Self.configuration(
                harness, completionTimeoutMs: completionTimeoutMs, starvationMs: starvationMs)
            configure(&configuration)
            let channel = Self.channel(configuration)
            let worker = harness.startWorker(.withBuiltIns(), configuration: configuration, foreign: channel)
            try await body(harness, channel, worker)
        }
    }

    /// The next event, parsed.
    static func poll(_ channel: ForeignDispatchChannel) async throws -> (ForeignStepEvent, JSONValue) {
        let event = try #require(await channel.poll(timeout: .seconds(15)), "no step event came")
        return (event, try JSONDecoder().decode(JSONValue.self, from: Data(event.json.utf8)))
    }

    static func success(_ step: UUID, _ result: JSONValue) throws -> String {
        let now = Date()
        return try StepExecutionResult.success(
            stepUUID: step, result: result, startedAt: now, completedAt: now, workerID: "python", hostname: nil
        ).jsonString()
    }

    @Test func foreignAndSwiftHandlersCompleteStepsInOneWorker() async throws {
        try await Self.withForeignWorker { harness, channel, worker in
            let task = try await harness.createTask(
                steps: ["swift_step", "py_step"], edges: [("swift_step", "py_step")], context: ["n": 21])
            try await harness.enqueue(task, "swift_step")
            try await harness.waitForState(task["swift_step"], ["enqueued_for_orchestration"])
            try await harness.completeLikeOrchestration(task, "swift_step")
            try await harness.enqueue(task, "py_step")

            let (event, json) = try await Self.poll(channel)
            #expect(event.stepUUID == task["py_step"])
            #expect(json["event_id"]?.stringValue == event.id.uuidString.lowercased())
            #expect(json["task_uuid"]?.stringValue == task.taskUUID.uuidString.lowercased())
            #expect(json["correlation_id"]?.stringValue == task.correlationID.uuidString.lowercased())
            #expect(json["trace_id"] == .null && json["span_id"] == .null)
            let tss = try #require(json["task_sequence_step"])
            #expect(tss["task"]?["task"]?["context"]?["n"] == 21)
            #expect(tss["task"]?["task"]?["task_uuid"]?.stringValue == task.taskUUID.uuidString.lowercased())
            #expect(tss["task"]?["task_name"] == "foreign" && tss["task"]?["namespace_name"] == "foreign")
            let step = try #require(tss["workflow_step"])
            #expect(step["name"] == "py_step" && step["template_step_name"] == "py_step")
            #expect(step["attempts"] == 1 && step["max_attempts"] == 3 && step["in_process"] == true)
            #expect(step["workflow_step_uuid"]?.stringValue == task["py_step"].uuidString.lowercased())
            #expect(step["inputs"] != nil && step["checkpoint"] == .null)
            #expect(step["created_at"]?.stringValue?.contains("T") == true, "naive timestamps from the row")
            #expect(step["last_attempted_at"]?.stringValue?.hasSuffix("Z") == false, "naive, as the claim set it")
            #expect(tss["step_definition"]?["handler"]?["callable"] == "python.double")
            #expect(tss["step_definition"]?["handler"]?["initialization"]?["factor"] == 2)
            #expect(tss["dependency_results"]?["swift_step"]?["success"] == true)

            // Hostile completions are refused and leave the event pending.
            #expect(throws: ForeignDispatchError.self) { try channel.complete(eventID: event.id.uuidString, resultJSON: "{not json") }
            #expect(throws: ForeignDispatchError.self) {
                try channel.complete(eventID: event.id.uuidString, resultJSON: try Self.success(UUID(), ["x": 1]))
            }
            #expect(throws: ForeignDispatchError.self) { try channel.complete(eventID: "nope", resultJSON: "{}") }
            #expect(channel.metrics.pendingCount == 1)

            try channel.complete(eventID: event.id.uuidString, resultJSON: try Self.success(task["py_step"], ["doubled": 42]))
            try await harness.waitForState(task["py_step"], ["enqueued_for_orchestration"])
            let stored = try await harness.result(task["py_step"])
            #expect(stored.isSuccess && stored.result["doubled"] == 42)
            #expect(stored.metadata.workerID == "python")
            #expect(try await harness.result(task["swift_step"]).isSuccess)

            let metrics = channel.metrics
            #expect(metrics.completions == 1 && metrics.pendingCount == 0 && metrics.polls >= 1 && metrics.timeouts == 0)
            let text = await WorkerMetricsRoutes.prometheusText(worker.daemon.runtime)
            #expect(text.contains("tasker_worker_ffi_dispatch_completions_total 1"))
            #expect(text.contains("tasker_worker_ffi_dispatch_pending 0"))
            let workerJSON = await WorkerMetricsRoutes.workerMetrics(worker.daemon.runtime)
            #expect(workerJSON.metrics["ffi_dispatch_completions"]?.value == 1)
            #expect(await worker.stop(within: .seconds(40)))
        }
    }

    @Test func aStepNotCompletedInTimeGetsHandlerTimeoutAndALateCompletionIsRefused() async throws {
        try await Self.withForeignWorker(completionTimeoutMs: 300) { harness, channel, worker in
            let task = try await harness.createTask(steps: ["py_step"])
            try await harness.enqueue(task, "py_step")
            let (event, _) = try await Self.poll(channel)
            try await harness.waitForState(task["py_step"], ["enqueued_as_error_for_orchestration"])
            let result = try await harness.result(task["py_step"])
            #expect(result.error?.errorType == "handler_timeout" && result.isRetryable)
            #expect(result.error?.message.contains("300ms") == true, "\(result.error?.message ?? "")")
            let late = try Self.success(task["py_step"], [:])
            do throws(ForeignDispatchError) {
                try channel.complete(eventID: event.id.uuidString, resultJSON: late)
                Issue.record("a late completion was accepted")
            } catch {
                if case .unknownEvent(let text) = error {
                    #expect(text.contains("timed out"), "\(text)")
                } else {
                    Issue.record("not an unknown event: \(error)")
                }
            }
            #expect(channel.metrics.timeouts == 1)
            #expect(await worker.stop(within: .seconds(40)))
        }
    }

    /// A failure given only as `error` (as a foreign SDK may send it) is stored with the
    /// retryability orchestration reads from `metadata`; nothing else is filled in (upstream's worker
    /// stores what the SDK sends: no `metadata.error_type`, no `worker_id`).
    @Test func aForeignFailureKeepsItsRetryabilityForOrchestration() async throws {
        try await Self.withForeignWorker { harness, channel, worker in
            let task = try await harness.createTask(steps: ["py_step"])
            try await harness.enqueue(task, "py_step")
            let (event, _) = try await Self.poll(channel)
            let failure: JSONValue = [
                "step_uuid": .string(task["py_step"].uuidString), "success": false, "status": "error",
                "error": ["message": "boom", "error_type": "handler_error", "retryable": true],
            ]
            try channel.complete(eventID: event.id.uuidString, resultJSON: try failure.jsonString())
            try await harness.waitForState(task["py_step"], ["enqueued_as_error_for_orchestration"])
            let stored = try await harness.result(task["py_step"])
            #expect(!stored.isSuccess && stored.isRetryable && stored.metadata.errorType == nil)
            #expect(stored.error?.message == "boom" && stored.metadata.workerID == nil && stored.metadata.startedAt == nil)
            #expect(await worker.stop(within: .seconds(40)))
        }
    }

    /// A context stored before the value limit, readable (≤ 128 levels) but too deep once wrapped in
    /// the event's envelope: the step fails for good (`step_data_unreadable`, not retryable), no
    /// event is offered to the foreign runtime, and the worker runs the next step.
    @Test func aStepWhoseEventWouldBeTooDeepFailsForGood() async throws {
        try await Self.withForeignWorker { harness, channel, worker in
            let deep = try await harness.createTask(steps: ["py_step"])
            try await harness.admin.query(
                "UPDATE tasker.tasks SET context = \(HostileFixtures.deepJSONSQL(UntrustedJSON.maximumDepth - 2)) WHERE task_uuid = $1",
                [deep.taskUUID])
            try await harness.enqueue(deep, "py_step")
            try await harness.waitForState(deep["py_step"], ["enqueued_as_error_for_orchestration"])
            let stored = try await harness.result(deep["py_step"])
            #expect(!stored.isSuccess && !stored.isRetryable)
            #expect(stored.metadata.errorType == StepExecutor.unreadableDataErrorType)
            #expect(stored.error?.message.contains("nested more than 128 levels") == true, "\(String(describing: stored.error))")
            #expect(channel.metrics.pendingCount == 0)

            let plain = try await harness.createTask(steps: ["py_step"])
            try await harness.enqueue(plain, "py_step")
            let (event, _) = try await Self.poll(channel)
            #expect(event.stepUUID == plain["py_step"])
            try channel.complete(eventID: event.id.uuidString, resultJSON: try Self.success(plain["py_step"], ["ok": true]))
            try await harness.waitForState(plain["py_step"], ["enqueued_for_orchestration"])
            #expect(await worker.stop(within: .seconds(40)))
        }
    }

    @Test func aCheckpointYieldIsPersistedAndTheStepDispatchedAgainWithIt() async throws {
        try await Self.withForeignWorker { harness, channel, worker in
            let task = try await harness.createTask(steps: ["py_step"])
            try await harness.enqueue(task, "py_step")
            let (first, _) = try await Self.poll(channel)
            let checkpoint: JSONValue = [
                "step_uuid": .string(task["py_step"].uuidString), "cursor": 5, "items_processed": 5,
                "accumulated_results": ["sum": 15],
            ]
            try channel.checkpointYield(eventID: first.id.uuidString, checkpointJSON: try checkpoint.jsonString())
            let (second, json) = try await Self.poll(channel)
            #expect(second.id != first.id && second.stepUUID == task["py_step"])
            let carried = try #require(json["task_sequence_step"]?["workflow_step"]?["checkpoint"])
            #expect(carried["cursor"] == 5 && carried["items_processed"] == 5 && carried["accumulated_results"]?["sum"] == 15)
            let stored: JSONValue = try await harness.admin.query(
                "SELECT checkpoint FROM tasker.workflow_steps WHERE workflow_step_uuid = $1", [task["py_step"]])[0]
                .decode("checkpoint")
            #expect(stored["cursor"] == 5)
            // The first event is spent.
            #expect(throws: ForeignDispatchError.self) {
                try channel.complete(eventID: first.id.uuidString, resultJSON: try Self.success(task["py_step"], [:]))
            }
            try channel.complete(eventID: second.id.uuidString, resultJSON: try Self.success(task["py_step"], ["sum": 40]))
            try await harness.waitForState(task["py_step"], ["enqueued_for_orchestration"])
            #expect(channel.metrics.checkpoints == 1 && channel.metrics.completions == 1)
            #expect(await worker.stop(within: .seconds(40)))
        }
    }

    @Test func anEventNobodyPollsIsCountedAsStarving() async throws {
        try await Self.withForeignWorker(starvationMs: 100) { harness, channel, worker in
            let task = try await harness.createTask(steps: ["py_step"])
            try await harness.enqueue(task, "py_step")
            try await waitUntil { channel.metrics.starvationWarnings >= 1 }
            let metrics = channel.metrics
            #expect(metrics.starvingEventCount == 1 && metrics.starvationDetected && metrics.queuedCount == 1)
            #expect(metrics.oldestPendingAgeMs >= 100)
            #expect(channel.reportStarvation() == 1, "the explicit check reports it again")
            let (event, _) = try await Self.poll(channel)
            try channel.complete(eventID: event.id.uuidString, resultJSON: try Self.success(task["py_step"], [:]))
            try await harness.waitForState(task["py_step"], ["enqueued_for_orchestration"])
            #expect(await worker.stop(within: .seconds(40)))
        }
    }

    /// One event polled and never completed, one never polled: the shutdown drain deadline gives
    /// both their retryable `handler_timeout`, and a completion after it is refused.
    @Test func shutdownDrainsPendingForeignSteps() async throws {
        try await Self.withForeignWorker(configure: { $0.worker.eventSystems.worker.timing.processingTimeoutSeconds = 1 }) {
            harness, channel, worker in
            let task = try await harness.createTask(steps: ["py_step", "py_other"])
            try await harness.enqueue(task, "py_step")
            let (polled, _) = try await Self.poll(channel)
            try await harness.enqueue(task, "py_other")
            try await waitUntil { channel.metrics.queuedCount == 1 }
            #expect(worker.daemon.runtime.dispatch.capacity.handlerPermitsInUse == 2, "foreign steps hold their permits")

            #expect(await worker.stop(within: .seconds(40)))
            for (step, text) in [("py_step", "did not finish"), ("py_other", "not started")] {
                #expect(try await harness.state(task[step]) == "enqueued_as_error_for_orchestration")
                let result = try await harness.result(task[step])
                #expect(result.error?.errorType == "handler_timeout" && result.isRetryable)
                #expect(result.error?.message.contains(text) == true, "\(step): \(result.error?.message ?? "")")
            }
            let late = try Self.success(task["py_step"], [:])
            do throws(ForeignDispatchError) {
                try channel.complete(eventID: polled.id.uuidString, resultJSON: late)
                Issue.record("a completion after the drain deadline was accepted")
            } catch {
                if case .unknownEvent(let text) = error {
                    #expect(text.contains("drain deadline"), "\(text)")
                } else {
                    Issue.record("not an unknown event: \(error)")
                }
            }
        }
    }
}
