import Foundation
import NIOCore
import TaskerAMQP
import TaskerModel
import TaskerTestSupport
import Testing

/// Tasker's queue topology on the real broker: declared as upstream declares it, so that an
/// independent client (pika, `Tests/Interop/rabbitmq_declare.py`) declaring the upstream way before
/// or after us gets no PRECONDITION_FAILED, and rejected messages reach the dead-letter queue.
@Suite("RabbitMQ queue topology", BrokerEnvironment.available)
struct RabbitMQTopologyTests {
    static let python = ProcessInfo.processInfo.environment["TASKER_TEST_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Interop/rabbitmq_declare.py").path

    /// Declares `queue` with pika the upstream way; its output ("declared" or the refusal).
    static func declareWithPika(_ queue: String) async throws -> String {
        let python = try #require(python, "TASKER_TEST_PYTHON is not set: scripts/test sets it (a python with pika)")
        let (status, output) = try await BrokerEnvironment.run(python, [script, try #require(BrokerEnvironment.url), queue])
        #expect(status == 0, "pika: \(output)")
        return output
    }

    static func deleteAll(_ queue: String, on connection: AMQPConnection) async throws {
        let channel = try await connection.openChannel()
        try await channel.deleteQueue(queue)
        try await channel.deleteQueue("\(queue)_dlq")
    }

    @Test func ourDeclarationAndUpstreamsAgreeInEitherOrder() async throws {
        let connection = try await BrokerEnvironment.connect()
        defer { Task { await connection.close() } }
        let oursFirst = BrokerEnvironment.uniqueName("worker_ours_first") + "_queue"
        try await RabbitMQTopology.declareQueue(oursFirst, on: try await connection.openChannel())
        #expect(try await Self.declareWithPika(oursFirst).contains("declared"))

        let upstreamFirst = BrokerEnvironment.uniqueName("worker_upstream_first") + "_queue"
        #expect(try await Self.declareWithPika(upstreamFirst).contains("declared"))
        let channel = try await connection.openChannel()
        try await RabbitMQTopology.declareQueue(upstreamFirst, on: channel)
        // Declaring again (as every start does) is as harmless.
        try await RabbitMQTopology.declareQueue(upstreamFirst, on: channel)
        try await Self.deleteAll(oursFirst, on: connection)
        try await Self.deleteAll(upstreamFirst, on: connection)
    }

    @Test func aRejectedMessageIsDeadLetteredToTheQueuesDLQ() async throws {
        let connection = try await BrokerEnvironment.connect()
        defer { Task { await connection.close() } }
        let queue = BrokerEnvironment.uniqueName("worker_dlx") + "_queue"
        let channel = try await connection.openChannel()
        try await RabbitMQTopology.declareQueue(queue, on: channel)
        try await channel.enablePublisherConfirms()
        try await channel.publish(ByteBuffer(string: "{\"poison\":true}"), routingKey: queue, properties: .persistentJSON)
        let got = try #require(try await channel.get(queue: queue))
        try await channel.nack(deliveryTag: got.delivery.deliveryTag, requeue: false)
        #expect(try await eventually { try await channel.inspectQueue("\(queue)_dlq").messageCount == 1 })
        let dead = try #require(try await channel.get(queue: "\(queue)_dlq"))
        #expect(String(buffer: dead.delivery.body) == "{\"poison\":true}")
        try await channel.ack(deliveryTag: dead.delivery.deliveryTag)
        // The DLQ itself is plain: declaring it the `_dlq` way matches what the queue's declaration made.
        try await RabbitMQTopology.declareQueue("\(queue)_dlq", on: channel)
        try await Self.deleteAll(queue, on: connection)
    }
}
