import Foundation
import Logging
import ServiceLifecycle
import TaskerOrchestration
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// The whole system on the test broker, for the orchestration tests of `RabbitMQWorkerTests`: our
/// worker and our orchestration with `[common.queues] backend = "rabbitmq"` on one test database
/// with the example templates (`OrchestrationHarness`), and what is read from the database after.
extension OrchestrationHarness {
    /// `workerConfiguration()` with the messages on the test broker.
    func brokerWorkerConfiguration() throws -> TaskerConfiguration {
        try RabbitMQWorkerTests.onBroker(workerConfiguration())
    }

    /// Our worker on the broker with the example handlers (or `handlers`); `adjust` changes its configuration.
    func startBrokerWorker(
        _ handlers: HandlerRegistry = exampleHandlers(), _ adjust: (inout TaskerConfiguration) -> Void = { _ in }
    ) throws -> PipelineHarness.RunningWorker {
        var configuration = try brokerWorkerConfiguration()
        adjust(&configuration)
        let daemon = WorkerDaemon(
            configuration: configuration, handlers: handlers,
            templateLoader: TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": templateDirectory]))
        return PipelineHarness.RunningWorker(daemon: daemon, task: Task { try await daemon.run() })
    }

    /// Our orchestration on the broker in its own `ServiceGroup` (as `startOrchestration`); its
    /// connection is named `connectionName` (`BrokerEnvironment.forceClose` finds it by that).
    func startBrokerOrchestration(
        connectionName: String = BrokerEnvironment.uniqueName("tasker-orchestration-test")
    ) throws
        -> RunningOrchestration
    {
        var settings = OrchestrationSettings()
        settings.readinessInterval = .milliseconds(200)
        let service = OrchestrationService(
            pool: db.pool(maxConnections: 10, acquireTimeout: .seconds(30)), databaseURL: db.url, settings: settings,
            broker: OrchestrationBroker(
                settings: try brokerWorkerConfiguration().common.queues.rabbitmq, connectionName: connectionName))
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: service)], gracefulShutdownSignals: [], logger: Logger(label: "test.orchestration")))
        return RunningOrchestration(service: service, group: group, task: Task { try await group.run() })
    }

    /// Messages ever sent to any PGMQ queue of this database (0: the broker carried everything).
    func pgmqMessagesEver() async throws -> Int {
        try await admin.query("SELECT coalesce(sum(total_messages), 0)::bigint AS n FROM pgmq.metrics_all()")[0].decode("n")
    }

    /// Tasks of `tasks` in `complete`.
    func completed(_ tasks: [UUID]) async throws -> Int {
        try await admin.query(
            """
            SELECT count(*)::int8 AS n FROM tasker.task_transitions
             WHERE most_recent AND to_state = 'complete' AND task_uuid = ANY($1::uuid[])
            """, [Self.uuidArray(tasks)])[0].decode("n")
    }

    /// Every step of `tasks` with its claims (`in_progress` transitions, one per attempt), results
    /// stored (`enqueued_for_orchestration` / `enqueued_as_error_for_orchestration`), successes,
    /// whether it is `complete` and whether it is still marked in process.
    func stepAccounts(_ tasks: [UUID]) async throws -> [StepAccount] {
        try await admin.query(
            """
            SELECT ws.workflow_step_uuid AS step, ns.name,
                   count(*) FILTER (WHERE wst.to_state = 'in_progress')::int8 AS claims,
                   count(*) FILTER (WHERE wst.to_state IN ('enqueued_for_orchestration', 'enqueued_as_error_for_orchestration'))::int8 AS results,
                   count(*) FILTER (WHERE wst.to_state = 'enqueued_for_orchestration')::int8 AS successes,
                   bool_or(wst.most_recent AND wst.to_state = 'complete') AS complete,
                   bool_or(ws.in_process) AS in_process
              FROM tasker.workflow_steps ws
              JOIN tasker.named_steps ns USING (named_step_uuid)
              JOIN tasker.workflow_step_transitions wst USING (workflow_step_uuid)
             WHERE ws.task_uuid = ANY($1::uuid[])
             GROUP BY ws.workflow_step_uuid, ns.name
            """, [Self.uuidArray(tasks)]
        ).map { row in
            StepAccount(
                step: try row.decode("step"), name: try row.decode("name"), claims: try row.decode("claims"),
                results: try row.decode("results"), successes: try row.decode("successes"), complete: try row.decode("complete"),
                inProcess: try row.decode("in_process"))
        }
    }

    static func uuidArray(_ uuids: [UUID]) -> String { "{" + uuids.map(\.uuidString).joined(separator: ",") + "}" }

    /// One step's attempts and results (`stepAccounts`).
    struct StepAccount: CustomStringConvertible {
        let step: UUID
        let name: String
        let claims: Int
        let results: Int
        let successes: Int
        let complete: Bool
        let inProcess: Bool

        /// Complete, one success, one result per attempt, nothing left claimed.
        var settled: Bool { complete && successes == 1 && claims == results && !inProcess }

        var description: String {
            "\(name) \(step): claims \(claims), results \(results), successes \(successes), complete \(complete), in process \(inProcess)"
        }
    }
}
