import Foundation
import NIOCore
import TaskerAMQP
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// The broker side of `RabbitMQWorkerTests`: the template, the worker's configuration, publishing
/// step messages and taking result messages the way orchestration does.
extension RabbitMQWorkerTests {
    /// A template of a namespace no other test (or run) uses, so its queue is this test's own.
    static func yaml(_ namespace: String) -> String {
        """
        name: rmq
        namespace_name: \(namespace)
        version: 1.0.0
        steps:
          - name: work
            handler: { callable: test.work }
            publishes_events:
              - name: rmq.done
                description: durable, on the broker
                condition: success
                delivery_mode: durable
                schema: null
          - name: second
            handler: { callable: test.work }
          - name: third
            handler: { callable: test.work }
        """
    }

    static func namespace() -> String { BrokerEnvironment.uniqueName("rmq").replacingOccurrences(of: "-", with: "_") }

    static func configuration(_ harness: PipelineHarness) throws -> TaskerConfiguration {
        var configuration = harness.configuration()
        configuration.common.queues.backend = .rabbitmq
        configuration.common.queues.rabbitmq.url = try #require(BrokerEnvironment.url)
        configuration.common.queues.rabbitmq.prefetchCount = 10
        return configuration
    }

    /// The broker connection the worker opened is named after it (`forceClose` finds it by that).
    static func connectionName(_ worker: PipelineHarness.RunningWorker) -> String {
        "tasker-worker \(worker.daemon.identity.publicID)"
    }

    static func broker(_ worker: PipelineHarness.RunningWorker) throws -> RabbitMQMessaging {
        try #require(worker.daemon.transport.broker)
    }

    /// Publishes a body to a worker queue (declared the upstream way first, as orchestration does).
    static func publish(_ body: String, to queue: String, on channel: AMQPChannel) async throws {
        try await RabbitMQTopology.declareQueue(queue, on: channel)
        try await channel.publish(ByteBuffer(string: body), routingKey: queue, properties: .persistentJSON)
    }

    static func stepMessage(_ task: PipelineHarness.SeededTask, _ step: String) -> String {
        StepMessage(taskUUID: task.taskUUID, stepUUID: task[step], correlationID: task.correlationID).jsonString()
    }

    /// Takes the result messages on `orchestration_step_results` until one names `step` (acking
    /// every message: the queue is this suite's); nil if none within the time.
    static func takeResult(for step: UUID, on channel: AMQPChannel) async throws -> AMQPDelivery? {
        var found: AMQPDelivery?
        _ = try await eventually(within: .seconds(15)) {
            while let got = try await channel.get(queue: QueueNames.stepResults) {
                try await channel.ack(deliveryTag: got.delivery.deliveryTag)
                if String(buffer: got.delivery.body).contains(step.uuidString.lowercased()) { found = got.delivery }
            }
            return found != nil
        }
        return found
    }

    /// A connection and channel of the test's own, in confirm mode.
    static func withBroker(_ body: (AMQPChannel) async throws -> Void) async throws {
        let connection = try await BrokerEnvironment.connect(name: BrokerEnvironment.uniqueName("rmq-worker-test"))
        do {
            let channel = try await connection.openChannel()
            try await channel.enablePublisherConfirms()
            try await RabbitMQTopology.declareQueue(QueueNames.stepResults, on: channel)
            try await body(channel)
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
    }

    /// Claims of this database's steps waiting on a lock.
    static func claimsWaiting(_ harness: PipelineHarness) async throws -> Int {
        try await harness.admin.query(
            """
            SELECT count(*)::int8 AS n FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%retired%'
            """)[0].decode("n")
    }

    /// Declares `queue` with pika the upstream way (`Tests/Interop/rabbitmq_declare.py`); its output.
    static func declareWithPika(_ queue: String) async throws -> String {
        let python = try #require(
            ProcessInfo.processInfo.environment["TASKER_TEST_PYTHON"].flatMap { $0.isEmpty ? nil : $0 },
            "TASKER_TEST_PYTHON is not set: scripts/test sets it (a python with pika)")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Interop/rabbitmq_declare.py").path
        let (status, output) = try await BrokerEnvironment.run(python, [script, try #require(BrokerEnvironment.url), queue])
        #expect(status == 0, "pika: \(output)")
        return output
    }
}
