import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// Shutdown stops intake at once: after the signal no message is read or claimed, whatever loop
/// was reading (here the poller's drain of a long queue, which used to go on claiming until the
/// queue was empty). A claim already in its round trip finishes and its steps are drained; the
/// rest stay `enqueued` with their messages queued.
@Suite("Shutdown stops intake at once", .timeLimit(.minutes(3)))
struct IntakeShutdownTests {
    static let yaml = """
        name: long_queue
        namespace_name: intake_stop
        version: 1.0.0
        steps:
          - name: slow
            handler: { callable: test.slow }
        """

    /// In every deployment mode: polling (the drain of a long queue), notifications and catch-up
    /// reads. In flight at the signal: at most one poll read (`batch`) and, with a listener, the
    /// notified deliveries (`max_concurrent_operations`).
    @Test(arguments: [WorkerConfiguration.DeploymentMode.pollingOnly, .hybrid, .eventDrivenOnly])
    func noStepIsClaimedAfterTheSignalBeyondTheClaimsInFlight(mode: WorkerConfiguration.DeploymentMode) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.slow") { _ in
                try await Task.sleep(for: .milliseconds(100))
                return .success(.emptyObject)
            }
            let batch = 5
            let deliveries = 2
            var configuration = harness.configuration(mode: mode, maxConcurrentHandlers: 4)
            configuration.worker.eventSystems.worker.processing.maxConcurrentOperations = deliveries
            // Nothing but the shutdown flag stops the poller's drain: no shedding, a small dispatch
            // buffer (claims go at the handlers' pace), a drain deadline that is never reached.
            configuration.worker.mpscChannels.handlerDispatch.loadShedding.enabled = false
            configuration.worker.mpscChannels.handlerDispatch.dispatchBufferSize = 1
            configuration.worker.eventSystems.worker.metadata.fallbackPoller.batchSize = batch
            configuration.worker.eventSystems.worker.timing.processingTimeoutSeconds = 60
            let tasks = try await harness.createSingleStepTasks(count: 150, step: "slow")
            try await harness.enqueueBatch(tasks, "slow")
            let worker = harness.startWorker(handlers, configuration: configuration)
            try await waitUntil(timeout: .seconds(20)) { try await harness.countSteps(in: ["in_progress"]) >= 4 }

            let claimedAtSignal = worker.daemon.statistics.snapshot.claimed
            guard await worker.stop(within: .seconds(60), "worker (\(mode)) stopped with a long queue") else { return }
            let claimedAfterSignal = worker.daemon.statistics.snapshot.claimed - claimedAtSignal
            // At most the claims that were in their round trip at the signal.
            let inFlight = mode == .pollingOnly ? batch : batch + deliveries
            #expect(
                claimedAfterSignal <= inFlight,
                "\(claimedAfterSignal) steps were claimed after the signal (claimed before: \(claimedAtSignal))")

            let summaries = try await harness.stepSummaries()
            let states = Dictionary(grouping: summaries.values, by: \.state).mapValues(\.count)
            #expect(states["in_progress", default: 0] == 0, "\(states)")
            let claimed = summaries.values.filter { $0.starts > 0 }
            #expect(claimed.allSatisfy { $0.state == "enqueued_for_orchestration" && $0.results == 1 }, "\(states)")
            let untouched = summaries.values.filter { $0.starts == 0 }
            #expect(untouched.allSatisfy { $0.state == "enqueued" && $0.attempts == 0 }, "\(states)")
            #expect(untouched.count >= tasks.count - claimedAtSignal - inFlight)
            #expect(untouched.count > tasks.count / 2, "the drain went on claiming: \(states)")
            // Their messages are still queued (read ones wait out their visibility timeout), none archived.
            #expect(try await harness.queuedIDs().count == untouched.count)
            #expect(try await harness.queueDepth(archived: true) == claimed.count)
        }
    }
}
