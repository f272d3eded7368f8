import Foundation
import Logging
import ServiceLifecycle
import TaskerExamples
import TaskerOrchestration
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// Runs real workers and the companion orchestration against a test database with the example
/// templates (`config/tasks/examples/`) plus any extra templates a test needs.
struct OrchestrationHarness {
    let db: TestDatabase
    let admin: PostgresConnection
    let templateDirectory: String
    /// The queues' own database (`withQueueDatabaseTestDatabases`); nil: PGMQ is in `db`.
    var queues: TestDatabase? = nil

    /// A permanently failing workflow used by the failure tests.
    static let failureYAML = """
        name: failure_workflow
        namespace_name: examples
        version: 1.0.0
        steps:
          - name: failure_prepare
            handler:
              callable: examples.linear.square
          - name: failure_explode
            dependencies: [failure_prepare]
            handler:
              callable: tasker.fail
              initialization:
                retryable: false
                message: "exploded on purpose"
        """

    /// Copies the example templates (and `extra` YAML files) to a fresh directory and registers them
    /// (their queues in `queues`, the queues' own database, when given: then every worker and
    /// orchestration of the harness uses it).
    static func make(
        _ db: TestDatabase, queues: TestDatabase? = nil, extra: [String: String] = ["failure_workflow.yaml": failureYAML]
    ) async throws -> OrchestrationHarness {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let examples = TestEnvironment.repositoryRoot + "/config/tasks/examples"
        for file in try FileManager.default.contentsOfDirectory(atPath: examples) where file.hasSuffix(".yaml") {
            try FileManager.default.copyItem(atPath: examples + "/" + file, toPath: directory.appendingPathComponent(file).path)
        }
        for (name, yaml) in extra {
            try yaml.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        let report = TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": directory.path]).loadAll()
        #expect(report.problems.isEmpty, "template problems: \(report.problems)")
        let pool = db.pool(maxConnections: 2)
        let queuePool = queues?.pool(maxConnections: 2)
        try await TaskTemplateRegistry(pool: pool, queuePool: queuePool).register(report.templates.map(\.template))
        await pool.close()
        await queuePool?.close()
        return OrchestrationHarness(db: db, admin: try await db.connect(), templateDirectory: directory.path, queues: queues)
    }

    /// Worker configuration: the test database, fast polling, free loopback ports.
    func workerConfiguration(maxConcurrentHandlers: Int = 10) -> TaskerConfiguration {
        var configuration = TaskerConfiguration()
        configuration.common.database.url = db.url
        configuration.common.pgmqDatabase.url = queues?.url ?? ""
        configuration.common.database.pool.maxConnections = 8
        configuration.common.database.pool.minConnections = 1
        configuration.worker.eventSystems.worker.metadata.fallbackPoller.pollingIntervalMs = 100
        configuration.worker.eventSystems.worker.metadata.fallbackPoller.ageThresholdSeconds = 1
        // A polled batch larger than the free handler permits is partly shed; shed messages come
        // back after this visibility timeout instead of the default 30 s.
        configuration.worker.eventSystems.worker.metadata.fallbackPoller.visibilityTimeoutSeconds = 2
        configuration.worker.mpscChannels.handlerDispatch.maxConcurrentHandlers = maxConcurrentHandlers
        configuration.worker.web.bindAddress = "127.0.0.1:0"
        configuration.worker.grpc.bindAddress = "127.0.0.1:0"
        return configuration
    }

    /// The example handlers plus the built-ins.
    static func exampleHandlers() -> HandlerRegistry {
        let registry = HandlerRegistry.withBuiltIns()
        ExampleHandlers.register(into: registry)
        return registry
    }

    func startWorker(
        _ handlers: HandlerRegistry = exampleHandlers(), maxConcurrentHandlers: Int = 10,
        adjust: (inout TaskerConfiguration) -> Void = { _ in }
    ) -> PipelineHarness.RunningWorker {
        var configuration = workerConfiguration(maxConcurrentHandlers: maxConcurrentHandlers)
        adjust(&configuration)
        let daemon = WorkerDaemon(
            configuration: configuration, handlers: handlers,
            templateLoader: TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": templateDirectory]))
        return PipelineHarness.RunningWorker(daemon: daemon, task: Task { try await daemon.run() })
    }

    /// A running orchestration in its own `ServiceGroup`.
    struct RunningOrchestration {
        let service: OrchestrationService
        let group: ServiceGroup
        let task: Task<Void, any Error>

        func submit(_ request: TaskRequest) async throws -> CreatedTask {
            guard case .taskInitialized(let created) = try await service.process(.initializeTask(request)) else {
                throw TestSetupError("initializeTask returned something else")
            }
            return created
        }

        func stop() async throws {
            await group.triggerGracefulShutdown()
            try await task.value
        }
    }

    func startOrchestration(
        maxConnections: Int = 10, visibilityTimeoutSeconds: Int = 30,
        configure: (inout OrchestrationSettings) -> Void = { _ in }
    ) -> RunningOrchestration {
        var settings = OrchestrationSettings()
        settings.visibilityTimeoutSeconds = visibilityTimeoutSeconds
        settings.pollInterval = .milliseconds(100)
        settings.readinessInterval = .milliseconds(200)
        configure(&settings)
        let pool = db.pool(maxConnections: maxConnections, acquireTimeout: .seconds(30))
        let service = OrchestrationService(
            pool: pool, databaseURL: db.url, settings: settings, queueDatabase: queueDatabase(maxConnections: maxConnections))
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: service)], gracefulShutdownSignals: [], logger: Logger(label: "test.orchestration")))
        return RunningOrchestration(service: service, group: group, task: Task { try await group.run() })
    }

    /// The queues' own database as an orchestration reaches it (nil: PGMQ is in `db`).
    func queueDatabase(maxConnections: Int = 4) -> OrchestrationQueueDatabase? {
        queues.map { OrchestrationQueueDatabase(pool: $0.pool(maxConnections: maxConnections, acquireTimeout: .seconds(30))) }
    }

    /// An orchestration that is not running (no reads, no discovery): its commands send their step
    /// messages to the queues' own database all the same.
    func queueDatabaseOrchestration() -> RunningOrchestration {
        let service = OrchestrationService(pool: db.pool(maxConnections: 4), databaseURL: db.url, queueDatabase: queueDatabase())
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [ServiceGroupConfiguration.ServiceConfiguration](), gracefulShutdownSignals: [],
                logger: Logger(label: "test.idle")))
        return RunningOrchestration(service: service, group: group, task: Task {})
    }

    /// Returns once `service`'s listener hears its channel: a probe notification (naming another
    /// queue, so rejected and never a read) is sent through `connection` until one is counted.
    func waitUntilListening(_ service: OrchestrationService, via connection: PostgresConnection) async throws {
        let channel = QueueNames.readyChannel(namespace: "orchestration")
        try await waitUntil(timeout: .seconds(20)) {
            try await connection.query("SELECT pg_notify($1, $2)", [channel, HostileFixtures.batchReady("worker_probe_queue", ids: 1...1)])
            try await Task.sleep(for: .milliseconds(50))
            return service.statistics.notificationsRejected > 0
        }
    }

    /// A task of `name` created by orchestration (its first steps enqueued), with orchestration
    /// stopped again: the database state for tests that then play every part by hand.
    func submittedTask(_ name: String, _ context: JSONValue) async throws -> CreatedTask {
        let orchestration = startOrchestration()
        let created = try await orchestration.submit(Self.request(name, context))
        try await orchestration.stop()
        return created
    }

    // MARK: Reading the outcome

    func taskState(_ task: UUID) async throws -> String? {
        try await admin.query(
            "SELECT to_state FROM tasker.task_transitions WHERE task_uuid = $1 AND most_recent",
            [task]
        ).first?.decode("to_state")
    }

    /// Waits until the task reaches one of `states`.
    @discardableResult
    func waitForTask(_ task: UUID, in states: Set<String>, timeout: Duration = .seconds(60)) async throws -> String {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var last: String?
        while ContinuousClock.now < deadline {
            last = try await taskState(task)
            if let last, states.contains(last) { return last }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("task \(task) still \(last ?? "nil"), expected one of \(states.sorted())")
        throw TestSetupError("timed out waiting for task state")
    }

    func taskTransitions(_ task: UUID) async throws -> [String] {
        try await admin.query(
            "SELECT to_state FROM tasker.task_transitions WHERE task_uuid = $1 ORDER BY sort_key",
            [task]
        ).map { try $0.decode("to_state") }
    }

    func stepUUID(_ task: UUID, _ name: String) async throws -> UUID {
        let rows = try await admin.query(
            """
            SELECT ws.workflow_step_uuid FROM tasker.workflow_steps ws
              JOIN tasker.named_steps ns ON ns.named_step_uuid = ws.named_step_uuid
             WHERE ws.task_uuid = $1 AND ns.name = $2
            """, [task, name])
        guard let row = rows.first else { throw TestSetupError("task \(task) has no step \(name)") }
        return try row.decode("workflow_step_uuid")
    }

    func stepTransitions(_ task: UUID, _ name: String) async throws -> [String] {
        let step = try await stepUUID(task, name)
        return try await admin.query(
            """
            SELECT to_state FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1 ORDER BY sort_key
            """, [step]
        ).map { try $0.decode("to_state") }
    }

    /// The step names of a task, sorted.
    func stepNames(_ task: UUID) async throws -> [String] {
        try await admin.query(
            """
            SELECT ns.name FROM tasker.workflow_steps ws JOIN tasker.named_steps ns USING (named_step_uuid)
             WHERE ws.task_uuid = $1 ORDER BY ns.name
            """, [task]
        ).map { try $0.decode("name") }
    }

    func result(_ task: UUID, _ name: String) async throws -> StepExecutionResult {
        let step = try await stepUUID(task, name)
        let raw: JSONValue = try await admin.query(
            "SELECT results FROM tasker.workflow_steps WHERE workflow_step_uuid = $1",
            [step])[0].decode("results")
        return try StepExecutionResult.decode(raw)
    }

    static func request(_ name: String, _ context: JSONValue) -> TaskRequest {
        TaskRequest(
            namespace: ExampleHandlers.namespace, name: name, version: ExampleHandlers.version, context: context,
            initiator: "tests", sourceSystem: "tests", reason: "orchestration test")
    }
}
