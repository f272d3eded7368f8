import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import TaskerAMQP
import TaskerExamples
import TaskerHTTP
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerPostgres
@testable import TaskerWorker

/// Our orchestration and our worker, both with `[common.queues] backend = "rabbitmq"`, on the real
/// broker and PostgreSQL. In the serialized suite of the worker's RabbitMQ tests: the orchestration
/// consumes `orchestration_step_results`, which those tests read too. Setup in `+System`.
extension RabbitMQWorkerTests {
    /// Every example workflow of `config/tasks/examples/`, with the checks of `ExampleWorkflowTests`
    /// (`ExampleWorkflowCase`), submitted at once to one worker and one orchestration on the broker.
    @Test func everyExampleWorkflowCompletesWithOurWorkerAndOrchestrationOnTheBroker() async throws {
        #expect(Set(ExampleWorkflowCase.all.map(\.name)) == ExampleWorkflowCase.exampleTemplateNames)
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let worker = try harness.startBrokerWorker()
            let orchestration = try harness.startBrokerOrchestration()
            try await ExampleWorkflowCase.runAll(harness, orchestration)
            // The step messages and the results went through the broker only: no PGMQ queue ever had a message.
            #expect(try await harness.pgmqMessagesEver() == 0)
            try await orchestration.stop()
            try await worker.stop()
        }
    }

    /// `/health/ready`, `/health/detailed` and `/metrics` of an orchestration on the broker report
    /// the connection (and a reconnect), the step messages published and the duplicate results and
    /// poison it settled; an orchestration whose broker is not connected is not ready.
    @Test func theOrchestrationsHealthAndMetricsReportTheBroker() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let worker = try harness.startBrokerWorker()
            let connectionName = BrokerEnvironment.uniqueName("tasker-orchestration-test")
            let orchestration = try harness.startBrokerOrchestration(connectionName: connectionName)
            let created = try await orchestration.submit(OrchestrationHarness.request("linear_workflow", ["number": 3]))
            #expect(try await harness.waitForTask(created.taskUUID, in: ["complete", "error"]) == "complete")
            // Each of the four steps: enqueued, claimed, completed once.
            for step in ["linear_square", "linear_add", "linear_multiply", "linear_verify"] {
                let transitions = try await harness.stepTransitions(created.taskUUID, step)
                #expect(transitions.filter { $0 == "enqueued" }.count == 1 && transitions.last == "complete", "\(step): \(transitions)")
            }
            // A duplicate result (as a worker's start-up re-publish sends) and a body that is not JSON:
            // both acked, the duplicate without effect, the poison counted.
            // (Counted from here: a result left on the queue by an earlier test of the suite is poison here.)
            let statistics = orchestration.service.statistics
            let (duplicates, poison) = (statistics.duplicateResults, statistics.poisonMessages)
            let first = try await harness.stepUUID(created.taskUUID, "linear_square")
            try await Self.withBroker { channel in
                let duplicate = StepMessage(taskUUID: created.taskUUID, stepUUID: first, correlationID: created.correlationID)
                try await Self.publish(duplicate.jsonString(), to: QueueNames.stepResults, on: channel)
                try await Self.publish("not json", to: QueueNames.stepResults, on: channel)
                try await waitUntil(timeout: .seconds(15)) {
                    statistics.duplicateResults == duplicates + 1 && statistics.poisonMessages == poison + 1
                }
                try await waitUntil(timeout: .seconds(15)) { try await channel.inspectQueue(QueueNames.stepResults).messageCount == 0 }
            }
            #expect(try await harness.taskState(created.taskUUID) == "complete")
            // The broker drops the orchestration's connection: it reconnects, and says so.
            let broker = try #require(orchestration.service.broker)
            #expect(try await BrokerEnvironment.forceClose(connectionsNamed: connectionName) == 1)
            try await waitUntil(timeout: .seconds(15)) { broker.status.connections == 2 && broker.isConnected }

            let answers = try await Self.operatorAnswers(orchestration.service)
            #expect(answers.ready == .ok)
            #expect(answers.detailed["status"] == "healthy", "\(answers.detailed)")
            let messaging = answers.detailed["checks"]?["messaging"]?["message"]?.stringValue ?? ""
            #expect(messaging.hasPrefix("RabbitMQ connected to amqp://") && messaging.contains("connections: 2"), "\(messaging)")
            #expect(!messaging.contains("guest:guest"), "the password is hidden: \(messaging)")
            let samples = answers.samples
            #expect(samples["tasker_orchestration_broker_connected"] == 1)
            #expect(samples["tasker_orchestration_broker_connections_total"] == 2)
            #expect(samples["tasker_orchestration_broker_published_total"] == 4, "one message per step: \(samples)")
            #expect(samples["tasker_orchestration_duplicate_results_total"] == Double(statistics.duplicateResults))
            #expect(samples["tasker_orchestration_poison_messages_total"] == Double(statistics.poisonMessages))
            #expect(samples["tasker_orchestration_results_processed_total"] == Double(statistics.resultsProcessed))
            #expect(statistics.duplicateResults >= 1 && statistics.resultsProcessed >= 5, "four results and the duplicate")
            try await orchestration.stop()
            try await worker.stop()

            // A broker that is not connected (nothing listens there): not ready, and said why.
            var settings = try harness.brokerWorkerConfiguration().common.queues.rabbitmq
            settings.url = "amqp://guest:guest@127.0.0.1:\(try freeLoopbackPort())/%2F"
            let pool = db.pool(maxConnections: 2)
            let unconnected = OrchestrationService(
                pool: pool, databaseURL: db.url,
                broker: OrchestrationBroker(settings: settings, connectionName: "tasker-orchestration-unconnected"))
            let down = try await Self.operatorAnswers(unconnected)
            await pool.close()
            #expect(down.ready == .serviceUnavailable)
            #expect(down.detailed["status"] == "unhealthy" && down.detailed["checks"]?["database"]?["status"] == "healthy")
            #expect(down.detailed["checks"]?["messaging"]?["message"]?.stringValue?.hasPrefix("RabbitMQ disconnected") == true)
            #expect(down.samples["tasker_orchestration_broker_connected"] == 0)
        }
    }

    @Test func aStepEnqueuedButNeverPublishedIsPublishedByTheNextStart() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            // An orchestration whose connection never runs: the first step commits `enqueued`, its
            // publish waits for the broker, and the orchestration dies there (the task is cancelled).
            let dead = OrchestrationService(
                pool: harness.db.pool(maxConnections: 2), databaseURL: harness.db.url,
                broker: OrchestrationBroker(
                    settings: try harness.brokerWorkerConfiguration().common.queues.rabbitmq, connectionName: "tasker-orchestration-dead"))
            let submitting = Task {
                try await dead.process(.initializeTask(OrchestrationHarness.request("linear_workflow", ["number": 2])))
            }
            var task: UUID?
            try await waitUntil(timeout: .seconds(15)) {
                task = try await harness.admin.query(
                    """
                    SELECT ws.task_uuid FROM tasker.workflow_step_transitions wst
                      JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
                     WHERE wst.most_recent AND wst.to_state = 'enqueued'
                    """
                ).first?.decode("task_uuid")
                return task != nil
            }
            submitting.cancel()
            _ = try? await submitting.value
            await dead.databasePool.close()
            let taskUUID = try #require(task)

            let worker = try harness.startBrokerWorker()
            let orchestration = try harness.startBrokerOrchestration()
            #expect(try await harness.waitForTask(taskUUID, in: ["complete", "error"]) == "complete")
            try await orchestration.stop()
            try await worker.stop()
        }
    }

    /// The orchestration's `/health/ready` status, `/health/detailed` body and `/metrics` samples
    /// (`name` → value, unlabelled), through its router.
    static func operatorAnswers(_ service: OrchestrationService) async throws -> OperatorAnswers {
        let authenticator = try await OrchestrationWebServer.authenticator(WorkerConfiguration.Auth(), logger: Logger(label: "test.auth"))
        let router = OrchestrationRoutes.makeRouter(
            queries: TaskQueries(pool: service.databasePool, orchestration: service), authenticator: authenticator,
            requestTimeout: .seconds(30))
        return try await Application(router: router).test(.router) { client in
            let ready = try await client.execute(uri: "/health/ready", method: .get) { $0.status }
            let detailed = try await client.execute(uri: "/health/detailed", method: .get) { response in
                try JSONDecoder().decode(JSONValue.self, from: Data(response.body.readableBytesView))
            }
            let metrics = try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.headers[.contentType] == PrometheusText.contentType)
                return String(buffer: response.body)
            }
            return OperatorAnswers(ready: ready, detailed: detailed, metrics: metrics)
        }
    }

    struct OperatorAnswers: Sendable {
        let ready: HTTPResponse.Status
        let detailed: JSONValue
        let metrics: String

        /// The unlabelled samples of `metrics`.
        var samples: [String: Double] {
            var samples: [String: Double] = [:]
            for line in metrics.split(separator: "\n") where !line.hasPrefix("#") {
                let parts = line.split(separator: " ")
                if parts.count == 2, let value = Double(parts[1]) { samples[String(parts[0])] = value }
            }
            return samples
        }
    }
}
