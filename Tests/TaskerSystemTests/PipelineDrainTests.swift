import Foundation
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Graceful shutdown mid-load loses no result: every step that was claimed (`in_progress`) has its
/// result stored, and every step that was not claimed is still `enqueued` with its message queued.
@Suite("Step pipeline drain on shutdown", .timeLimit(.minutes(3)))
struct PipelineDrainTests {
    static let yaml = """
        name: naps
        namespace_name: drain
        version: 1.0.0
        steps:
          - name: nap
            handler: { callable: tasker.sleep, initialization: { ms: 300 } }
          - name: counted_nap
            handler: { callable: test.counted_nap }
        """

    /// The real `tasker-worker run` (TASKER_ENV=test: 5 handlers, Hybrid) gets SIGTERM while steps run.
    @Test func sigtermMidLoadLosesNoResult() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let tasks = try await harness.createSingleStepTasks(count: 30, step: "nap")
            let worker = try WorkerProcess(["run"], db: db, templatePath: harness.templateDirectory)
            // Never leave the child behind, whatever happens below.
            defer { worker.kill() }

            try await harness.waitForWorkersReady(1, mode: .hybrid)
            try await harness.enqueueBatch(tasks, "nap")
            try await waitUntil(timeout: .seconds(20)) {
                try await harness.countSteps(in: ["in_progress"]) >= 2
            }
            guard try await worker.terminate(within: .seconds(20)) else {  // SIGTERM
                worker.kill()
                Issue.record("the worker did not exit within 20 s of SIGTERM:\n\(worker.log.suffix(3000))")
                return
            }
            #expect(worker.process.terminationStatus == 0, "\(worker.log.suffix(3000))")
            #expect(worker.log.contains("tasker worker stopped"))
            try await Self.expectNothingLost(harness, tasks, step: "nap")
        }
    }

    /// The same with the in-process worker's graceful shutdown, in every deployment mode; a second
    /// worker then finishes the rest, and no step ran twice.
    @Test(arguments: [WorkerConfiguration.DeploymentMode.hybrid, .eventDrivenOnly, .pollingOnly])
    func gracefulShutdownMidLoadLosesNoResult(mode: WorkerConfiguration.DeploymentMode) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let invocations = InvocationCounter()
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.counted_nap") { context in
                invocations.record(context.stepUUID)
                // Not cut short by shutdown: a running handler is allowed to finish.
                try await Task.sleep(for: .milliseconds(250))
                return .success(.object(["napped": .bool(true)]))
            }
            var configuration = harness.configuration(mode: mode, maxConcurrentHandlers: 4)
            configuration.worker.eventSystems.worker.metadata.fallbackPoller.visibilityTimeoutSeconds = 1
            configuration.worker.eventSystems.worker.timing.visibilityTimeoutSeconds = 1
            // Small polls, so that the poller does not claim every step in one batch.
            configuration.worker.eventSystems.worker.metadata.fallbackPoller.batchSize = 2
            let tasks = try await harness.createSingleStepTasks(count: 20, step: "counted_nap")
            let first = harness.startWorker(handlers, configuration: configuration)
            try await harness.waitForWorkersReady(1, mode: mode)
            try await harness.enqueueBatch(tasks, "counted_nap")
            try await waitUntil(timeout: .seconds(20)) { try await harness.countSteps(in: ["in_progress"]) >= 2 }
            guard await first.stop(within: .seconds(20), "worker (\(mode)) stopped mid-load") else {
                let states = Dictionary(grouping: try await harness.stepSummaries().values, by: \.state).mapValues(\.count)
                Issue.record("step states when the worker failed to stop: \(states)")
                return
            }
            try await Self.expectNothingLost(harness, tasks, step: "counted_nap")
            let claimedByFirst = first.daemon.statistics.snapshot.claimed

            // A new worker picks up exactly what was left.
            let second = harness.startWorker(handlers, configuration: configuration)
            try await harness.waitForWorkersReady(1, mode: mode)
            let finished = await harness.waitForAllSteps(["enqueued_for_orchestration"], timeout: .seconds(30))
            await second.stop(within: .seconds(20))
            #expect(finished)
            #expect(second.daemon.statistics.snapshot.claimed == tasks.count - claimedByFirst)
            for task in tasks {
                #expect(invocations.count(task["counted_nap"]) == 1, "step ran \(invocations.count(task["counted_nap"])) times")
            }
            let summaries = try await harness.stepSummaries()
            #expect(summaries.values.allSatisfy { $0.starts == 1 && $0.results == 1 && $0.attempts == 1 }, "\(summaries)")
        }
    }

    /// Graceful shutdown requested right after start (while the worker boots) still stops it.
    @Test(arguments: [WorkerConfiguration.DeploymentMode.hybrid, .eventDrivenOnly, .pollingOnly])
    func aWorkerStoppedRightAfterStartStops(mode: WorkerConfiguration.DeploymentMode) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let worker = harness.startWorker(HandlerRegistry.withBuiltIns(), configuration: harness.configuration(mode: mode))
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...300)))
            await worker.stop(within: .seconds(15), "worker (\(mode)) stopped right after start")
        }
    }

    /// After shutdown: steps that started have their result; the others are untouched and queued.
    static func expectNothingLost(_ harness: PipelineHarness, _ tasks: [PipelineHarness.SeededTask], step: String) async throws {
        let summaries = try await harness.stepSummaries()
        let queued = try await harness.queuedIDs().count
        let archived = try await harness.queueDepth(archived: true)
        var started = 0
        var untouched = 0
        for task in tasks {
            guard let summary = summaries[task[step]] else {
                Issue.record("step \(task[step]) missing")
                continue
            }
            if summary.starts > 0 {
                started += 1
                #expect(summary.state == "enqueued_for_orchestration", "a started step lost its result: \(summary)")
                #expect(summary.starts == 1 && summary.results == 1, "\(summary)")
            } else {
                untouched += 1
                #expect(summary.state == "enqueued", "\(summary)")
                #expect(summary.attempts == 0 && summary.results == 0, "\(summary)")
            }
        }
        #expect(started > 0, "no step was running at shutdown")
        // Not asserted: `untouched > 0`. Load shedding does not count claimed steps waiting in the
        // dispatch buffer, so a burst of notifications can get every step claimed (and drained).
        #expect(queued == untouched, "worker queue holds \(queued) messages for \(untouched) unclaimed steps")
        #expect(archived == started)
        let messages: [StepMessage] = try await harness.admin.query(
            "SELECT message FROM pgmq.q_\(QueueNames.workerQueue(namespace: harness.namespace))"
        )
        .map { try $0.decode("message", as: JSONValue.self).decode(StepMessage.self) }
        #expect(Set(messages.map(\.stepUUID)) == Set(tasks.map { $0[step] }.filter { summaries[$0]?.starts == 0 }))
    }
}
