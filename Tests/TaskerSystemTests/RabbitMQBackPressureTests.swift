import Foundation
import TaskerAMQP
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

extension RabbitMQWorkerTests {
    /// Back-pressure on the broker: with every handler permit busy, the deliveries beyond the
    /// load-shedding threshold stay unacked with the worker and wait for room (the broker's prefetch
    /// bounds them): none is claimed ahead of a permit, none is nacked back to the queue, and each
    /// is claimed as soon as a permit frees. Before, each went back to the queue after a backoff that
    /// grew to 5 s, churning through the broker and starving the drain (docs/rabbitmq.md,
    /// "Back-pressure").
    @Test func deliveriesBeyondTheThresholdWaitUnackedForRoomAndAreNeverRequeued() async throws {
        try await Self.scenario { s in
            let gate = OneShotSignal()
            let running = InvocationCounter()
            let worker = try s.startWorker(work: { context in
                running.record(context.stepUUID)
                await gate.wait()
                return .success(["done": true])
            }) {
                $0.worker.mpscChannels.handlerDispatch.maxConcurrentHandlers = 2
                $0.worker.mpscChannels.handlerDispatch.loadShedding.capacityThresholdPercent = 100
            }
            let intake = try #require(worker.daemon.runtime.eventSystem.intake as? RabbitMQIntake)
            var tasks: [PipelineHarness.SeededTask] = []
            for _ in 0..<6 { tasks.append(try await s.publishedTask()) }
            try await waitUntil(timeout: .seconds(15)) { running.total == 2 }
            // All six delivered to the worker (prefetch 10): two claimed and running, four held.
            try await waitUntil(timeout: .seconds(15)) { try await s.queueDepth() == 0 }
            // Each of the four held deliveries refused for room three times: its first try and two
            // re-checks after waiting (`RabbitMQIntake.roomRecheck`). Each try was a chance for the
            // old path to nack it back to the queue and for a claim to run ahead of the permits.
            let statistics = worker.daemon.statistics
            try await waitUntil(timeout: .seconds(30)) { statistics.snapshot.shedClaims >= 4 * 3 }
            let claimed: Int = try await s.harness.admin.query(
                "SELECT count(*)::int8 AS n FROM tasker.workflow_steps WHERE in_process")[0].decode("n")
            #expect(claimed == 2, "claims ran ahead of the 2 handler permits")
            #expect(running.total == 2)
            #expect(intake.requeued == 0, "deliveries waiting for room were nacked back to the queue")
            #expect(try await s.queueDepth() == 0)
            // Room frees: every held delivery is claimed and run, once.
            gate.trigger()
            for task in tasks { try await s.harness.waitForState(task["work"], ["enqueued_for_orchestration"]) }
            for task in tasks { #expect(running.count(task["work"]) == 1) }
            #expect(intake.requeued == 0)
            for task in tasks { _ = try await s.takeResult(for: task["work"]) }
            try await worker.stop()
            #expect(try await s.queueDepth() == 0)
        }
    }
}
