import Foundation
import NIOCore
import TaskerAMQP
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// The broker side of `RabbitMQWorkerTests`: each test's world (`BrokerScenario`: a database with
/// the suite's template in a namespace of its own, the test's channel), the worker's configuration,
/// publishing step messages and taking result messages the way orchestration does.
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

    /// `base` (the harness's by default) with the messages on the test broker.
    static func onBroker(_ base: TaskerConfiguration) throws -> TaskerConfiguration {
        var configuration = base
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
        try #require(worker.daemon.broker)
    }

    /// Publishes a body to a queue (declared the upstream way first, as orchestration does).
    static func publish(_ body: String, to queue: String, on channel: AMQPChannel) async throws {
        try await RabbitMQTopology.declareQueue(queue, on: channel)
        try await channel.publish(ByteBuffer(string: body), routingKey: queue, properties: .persistentJSON)
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

    /// Runs `body` in a fresh test database with the suite's template in a namespace of its own,
    /// on a channel of the test's own.
    static func scenario(_ body: (BrokerScenario) async throws -> Void) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: yaml(namespace()))
            try await withBroker { channel in try await body(BrokerScenario(harness: harness, channel: channel)) }
        }
    }

    /// Claims of `admin`'s database waiting on a lock.
    static func claimsWaiting(_ admin: PostgresConnection) async throws -> Int {
        try await admin.query(
            """
            SELECT count(*)::int8 AS n FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%retired%'
            """)[0].decode("n")
    }

    /// Holds `step`'s transition rows (FOR UPDATE) in an open transaction on a connection of its
    /// own: a claim of the step blocks, uncommitted, until the returned connection rolls back.
    static func holdClaim(of step: UUID, in db: TestDatabase) async throws -> PostgresConnection {
        let holder = try await db.connect()
        try await holder.execute("BEGIN")
        try await holder.query(
            "SELECT 1 AS held FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1 FOR UPDATE", [step])
        return holder
    }

    /// Ends `holdClaim`'s transaction: the blocked claim goes on.
    static func release(_ holder: PostgresConnection) async throws {
        try await holder.execute("ROLLBACK")
        await holder.close()
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

/// One RabbitMQ worker test's world: a test database with `RabbitMQWorkerTests.yaml` in a namespace
/// of its own (so its worker queue is the test's own), and the test's channel (confirm mode) playing
/// orchestration: it publishes step messages and takes result messages.
struct BrokerScenario {
    let harness: PipelineHarness
    let channel: AMQPChannel

    var db: TestDatabase { harness.db }
    /// The namespace's worker queue.
    var queue: String { QueueNames.workerQueue(namespace: harness.namespace) }

    /// A worker on the broker with the built-ins and `work` as `test.work` (default: succeeds);
    /// `configured` changes its configuration.
    func startWorker(
        work: @escaping @Sendable (StepContext) async throws -> StepHandlerResult = { _ in .success(["done": true]) },
        configured adjust: (inout TaskerConfiguration) -> Void = { _ in }
    ) throws -> PipelineHarness.RunningWorker {
        let handlers = HandlerRegistry.withBuiltIns()
        handlers.register("test.work", work)
        var configuration = try RabbitMQWorkerTests.onBroker(harness.configuration())
        adjust(&configuration)
        return harness.startWorker(handlers, configuration: configuration)
    }

    /// A task of `steps`, each moved `pending → enqueued` and its step message published to the
    /// worker queue, as orchestration does.
    func publishedTask(_ steps: [String] = ["work"]) async throws -> PipelineHarness.SeededTask {
        let task = try await enqueuedTask(steps)
        for step in steps { try await publish(task, step) }
        return task
    }

    /// A task of `steps`, each moved `pending → enqueued`, no message published yet.
    func enqueuedTask(_ steps: [String] = ["work"]) async throws -> PipelineHarness.SeededTask {
        let task = try await harness.createTask(steps: steps)
        for step in steps {
            try await harness.transition(task[step], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
        }
        return task
    }

    /// Publishes `step`'s step message to the worker queue.
    func publish(_ task: PipelineHarness.SeededTask, _ step: String) async throws {
        try await publish(StepMessage(taskUUID: task.taskUUID, stepUUID: task[step], correlationID: task.correlationID).jsonString())
    }

    /// Publishes `body` to the worker queue.
    func publish(_ body: String) async throws {
        try await RabbitMQWorkerTests.publish(body, to: queue, on: channel)
    }

    /// Messages ready in the worker queue (passive declare).
    func queueDepth(_ name: String? = nil) async throws -> UInt32 {
        try await channel.inspectQueue(name ?? queue).messageCount
    }

    /// Takes the result messages on `orchestration_step_results` until one names `step` (acking
    /// every message: the queue is this suite's); nil if none within the time.
    func takeResult(for step: UUID) async throws -> AMQPDelivery? {
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

    /// Holds `step`'s claim (`RabbitMQWorkerTests.holdClaim`) until `RabbitMQWorkerTests.release`.
    func holdClaim(of step: UUID) async throws -> PostgresConnection {
        try await RabbitMQWorkerTests.holdClaim(of: step, in: db)
    }

    /// Waits until a claim of this database blocks on a held lock.
    func waitForBlockedClaim() async throws {
        try await waitUntil(timeout: .seconds(15)) { try await RabbitMQWorkerTests.claimsWaiting(harness.admin) >= 1 }
    }

    /// The number of `in_progress` transitions (claims) of `step`.
    func claims(_ step: UUID) async throws -> Int {
        try await harness.transitions(step).filter { $0.to == "in_progress" }.count
    }
}

/// A handler that signals when it runs and waits (at most 10 s) for the test to release it.
final class HeldHandler: Sendable {
    let entered = TestFlag()
    let released = TestFlag()

    var work: @Sendable (StepContext) async throws -> StepHandlerResult {
        { [entered, released] _ in
            entered.set(true)
            for _ in 0..<2000 where !released.value { try? await Task.sleep(for: .milliseconds(5)) }
            return .success(["done": true])
        }
    }

    func waitUntilEntered() async throws { try await waitUntil(timeout: .seconds(15)) { self.entered.value } }
    func release() { released.set(true) }
}
