import Foundation
import Logging
import ServiceLifecycle
import TaskerAMQP
import TaskerExamples
import TaskerOrchestration
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// Our orchestration and our worker, both with `[common.queues] backend = "rabbitmq"`, on the real
/// broker and PostgreSQL. In the serialized suite of the worker's RabbitMQ tests: the orchestration
/// consumes `orchestration_step_results`, which those tests read too.
extension RabbitMQWorkerTests {
    @Test func ourOrchestrationAndOurWorkerRunTheLinearWorkflowToCompleteOnTheBrokerAlone() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            var configuration = harness.workerConfiguration()
            configuration.common.queues.backend = .rabbitmq
            configuration.common.queues.rabbitmq.url = try #require(BrokerEnvironment.url)
            let daemon = WorkerDaemon(
                configuration: configuration, handlers: OrchestrationHarness.exampleHandlers(),
                templateLoader: TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": harness.templateDirectory]))
            let worker = PipelineHarness.RunningWorker(daemon: daemon, task: Task { try await daemon.run() })
            let orchestration = Self.startOrchestration(harness, settings: configuration.common.queues.rabbitmq)
            let broker = try #require(orchestration.service.broker)

            let created = try await orchestration.submit(OrchestrationHarness.request("linear_workflow", ["number": 3]))
            #expect(try await harness.waitForTask(created.taskUUID, in: ["complete", "error"]) == "complete")
            // Each of the four steps: enqueued, claimed, completed once.
            for step in ["linear_square", "linear_add", "linear_multiply", "linear_verify"] {
                let transitions = try await harness.stepTransitions(created.taskUUID, step)
                #expect(transitions.filter { $0 == "enqueued" }.count == 1 && transitions.last == "complete", "\(step): \(transitions)")
            }
            // The step messages and the results went through the broker only: no PGMQ queue ever had a message.
            let pgmqMessages: Int = try await harness.admin.query(
                "SELECT coalesce(sum(total_messages), 0)::bigint AS n FROM pgmq.metrics_all()")[0].decode("n")
            #expect(pgmqMessages == 0)
            #expect(broker.publishCounts.published >= 4)
            #expect(orchestration.service.statistics.resultsProcessed >= 4)

            // A duplicate result (as a worker's start-up re-publish sends) and a body that is not JSON:
            // both acked, the duplicate without effect, the poison counted.
            let (duplicates, poison) = (orchestration.service.statistics.duplicateResults, orchestration.service.statistics.poisonMessages)
            let first = try await harness.stepUUID(created.taskUUID, "linear_square")
            try await Self.withBroker { channel in
                let duplicate = StepMessage(taskUUID: created.taskUUID, stepUUID: first, correlationID: created.correlationID)
                try await Self.publish(duplicate.jsonString(), to: QueueNames.stepResults, on: channel)
                try await Self.publish("not json", to: QueueNames.stepResults, on: channel)
                try await waitUntil(timeout: .seconds(15)) {
                    orchestration.service.statistics.duplicateResults == duplicates + 1
                        && orchestration.service.statistics.poisonMessages == poison + 1
                }
                try await waitUntil(timeout: .seconds(15)) {
                    try await channel.inspectQueue(QueueNames.stepResults).messageCount == 0
                }
            }
            #expect(try await harness.taskState(created.taskUUID) == "complete")
            try await orchestration.stop()
            try await worker.stop()
        }
    }

    @Test func aStepEnqueuedButNeverPublishedIsPublishedByTheNextStart() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            var configuration = harness.workerConfiguration()
            configuration.common.queues.backend = .rabbitmq
            configuration.common.queues.rabbitmq.url = try #require(BrokerEnvironment.url)
            // An orchestration whose connection never runs: the first step commits `enqueued`, its
            // publish waits for the broker, and the orchestration dies there (the task is cancelled).
            let dead = OrchestrationService(
                pool: harness.db.pool(maxConnections: 2), databaseURL: harness.db.url,
                broker: OrchestrationBroker(settings: configuration.common.queues.rabbitmq, connectionName: "tasker-orchestration-dead"))
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

            let daemon = WorkerDaemon(
                configuration: configuration, handlers: OrchestrationHarness.exampleHandlers(),
                templateLoader: TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": harness.templateDirectory]))
            let worker = PipelineHarness.RunningWorker(daemon: daemon, task: Task { try await daemon.run() })
            let orchestration = Self.startOrchestration(harness, settings: configuration.common.queues.rabbitmq)
            #expect(try await harness.waitForTask(taskUUID, in: ["complete", "error"]) == "complete")
            try await orchestration.stop()
            try await worker.stop()
        }
    }

    /// The orchestration on RabbitMQ in its own `ServiceGroup` (as `OrchestrationHarness.startOrchestration`).
    static func startOrchestration(
        _ harness: OrchestrationHarness, settings rabbitmq: CommonConfiguration.RabbitMQSettings
    ) -> OrchestrationHarness.RunningOrchestration {
        var settings = OrchestrationSettings()
        settings.readinessInterval = .milliseconds(200)
        let service = OrchestrationService(
            pool: harness.db.pool(maxConnections: 10, acquireTimeout: .seconds(30)), databaseURL: harness.db.url,
            settings: settings,
            broker: OrchestrationBroker(settings: rabbitmq, connectionName: "tasker-orchestration-test"))
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: service)], gracefulShutdownSignals: [], logger: Logger(label: "test.orchestration")))
        return OrchestrationHarness.RunningOrchestration(service: service, group: group, task: Task { try await group.run() })
    }
}
