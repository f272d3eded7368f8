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
    /// grew to 5 s, churning through the broker and starving the drain (docs/benchmarks.md, the
    /// quick RabbitMQ drain at 98 steps/s against PGMQ's 372).
    @Test func deliveriesBeyondTheThresholdWaitUnackedForRoomAndAreNeverRequeued() async throws {
        try await withTestDatabase { db in
            let namespace = Self.namespace()
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml(namespace))
            let gate = OneShotSignal()
            let running = InvocationCounter()
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.work") { context in
                running.record(context.stepUUID)
                await gate.wait()
                return .success(["done": true])
            }
            var configuration = try Self.configuration(harness)
            configuration.worker.mpscChannels.handlerDispatch.maxConcurrentHandlers = 2
            configuration.worker.mpscChannels.handlerDispatch.loadShedding.capacityThresholdPercent = 100
            let worker = harness.startWorker(handlers, configuration: configuration)
            let intake = try #require(worker.daemon.runtime.eventSystem.broker)
            try await Self.withBroker { channel in
                var tasks: [PipelineHarness.SeededTask] = []
                for _ in 0..<6 {
                    let task = try await harness.createTask(steps: ["work"])
                    try await harness.transition(task["work"], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
                    tasks.append(task)
                }
                let queue = QueueNames.workerQueue(namespace: namespace)
                for task in tasks { try await Self.publish(Self.stepMessage(task, "work"), to: queue, on: channel) }
                try await waitUntil(timeout: .seconds(15)) { running.total == 2 }
                // All six delivered to the worker (prefetch 10), two claimed and running, four held.
                try await waitUntil(timeout: .seconds(15)) {
                    let counts = try await channel.inspectQueue(queue)
                    return counts.messageCount == 0
                }
                // Long enough for the old path to nack several times (backoff from 100 ms) and for the
                // waiters' 1 s re-check to run.
                try await Task.sleep(for: .milliseconds(2500))
                let claimed: Int = try await harness.admin.query(
                    "SELECT count(*)::int8 AS n FROM tasker.workflow_steps WHERE in_process")[0].decode("n")
                #expect(claimed == 2, "claims ran ahead of the 2 handler permits")
                #expect(running.total == 2)
                #expect(intake.requeued == 0, "deliveries waiting for room were nacked back to the queue")
                #expect(try await channel.inspectQueue(queue).messageCount == 0)
                // Room frees: every held delivery is claimed and run, once.
                gate.trigger()
                for task in tasks { try await harness.waitForState(task["work"], ["enqueued_for_orchestration"]) }
                for task in tasks { #expect(running.count(task["work"]) == 1) }
                #expect(intake.requeued == 0)
                try await worker.stop()
                #expect(try await channel.inspectQueue(queue).messageCount == 0)
                while let got = try await channel.get(queue: QueueNames.stepResults) {
                    try await channel.ack(deliveryTag: got.delivery.deliveryTag)
                }
            }
        }
    }
}
