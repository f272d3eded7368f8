import Foundation
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// Drives a real worker (in-process `WorkerDaemon`) against a test database the way Tasker's
/// orchestration does: creates tasks and steps, commits `pending→enqueued`, sends the step message
/// with `pgmq_send_with_notify`, and marks results complete.
struct PipelineHarness {
    let db: TestDatabase
    let admin: PostgresConnection
    let templateDirectory: String
    let template: TaskTemplate

    struct SeededTask {
        let taskUUID: UUID
        let correlationID: UUID
        let steps: [String: UUID]
        subscript(_ name: String) -> UUID { steps[name]! }
    }

    /// Writes `yaml` as the only template and registers it.
    static func make(_ db: TestDatabase, yaml: String) async throws -> PipelineHarness {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tpl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("template.yaml")
        try yaml.write(to: file, atomically: true, encoding: .utf8)
        let loaded = try TaskTemplateLoader().loadFile(atPath: file.path).get()
        let pool = db.pool(maxConnections: 2)
        try await TaskTemplateRegistry(pool: pool).register([loaded.template])
        await pool.close()
        return PipelineHarness(
            db: db, admin: try await db.connect(), templateDirectory: directory.path,
            template: loaded.template)
    }

    var namespace: String { template.namespaceName }

    /// A configuration pointing at the test database with fast polling.
    func configuration(
        mode: WorkerConfiguration.DeploymentMode = .hybrid, maxConcurrentHandlers: Int = 10,
        handlerTimeoutMs: Int = 30_000
    ) -> TaskerConfiguration {
        var configuration = TaskerConfiguration()
        configuration.common.database.url = db.url
        configuration.common.database.pool.maxConnections = 12
        configuration.common.database.pool.minConnections = 1
        configuration.worker.eventSystems.worker.deploymentMode = mode
        configuration.worker.eventSystems.worker.metadata.fallbackPoller.pollingIntervalMs = 100
        configuration.worker.eventSystems.worker.metadata.fallbackPoller.ageThresholdSeconds = 1
        configuration.worker.mpscChannels.handlerDispatch.maxConcurrentHandlers = maxConcurrentHandlers
        configuration.worker.mpscChannels.handlerDispatch.handlerTimeoutMs = handlerTimeoutMs
        // Tests run in parallel: the operator servers take free loopback ports.
        configuration.worker.web.bindAddress = "127.0.0.1:0"
        configuration.worker.grpc.bindAddress = "127.0.0.1:0"
        return configuration
    }

    /// Starts a worker; it runs until `stop` is called on the returned handle.
    /// `foreign`: the FFI dispatch channel steps without a Swift handler go to.
    func startWorker(
        _ handlers: HandlerRegistry, configuration: TaskerConfiguration, foreign: ForeignDispatchChannel? = nil
    ) -> RunningWorker {
        let daemon = WorkerDaemon(
            configuration: configuration, handlers: handlers,
            templateLoader: TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": templateDirectory]),
            foreignHandlers: foreign)
        let task = Task { try await daemon.run() }
        return RunningWorker(daemon: daemon, task: task)
    }

    struct RunningWorker {
        let daemon: WorkerDaemon
        let task: Task<Void, any Error>

        /// Graceful shutdown, then waits for the worker to finish.
        func stop() async throws {
            // The group may not exist yet if the worker is still booting.
            for _ in 0..<100 {
                await daemon.shutdown()
                if await Self.finished(task, within: .milliseconds(100)) { break }
            }
            try await task.value
        }

        private static func finished(_ task: Task<Void, any Error>, within timeout: Duration) async -> Bool {
            if case .value = await withDeadline(timeout, { _ = await task.result }) { return true }
            return false
        }
    }

    /// Creates a task of the harness's template with the named steps and `parent → child` edges,
    /// each step `pending` (as orchestration's task initializer leaves them).
    func createTask(steps: [String], edges: [(String, String)] = [], context: JSONValue = .emptyObject) async throws -> SeededTask {
        let correlation = UUID.v7()
        let task: UUID = try await admin.query(
            """
            INSERT INTO tasker.tasks (named_task_uuid, requested_at, identity_hash, correlation_id, context, created_at, updated_at)
            SELECT nt.named_task_uuid, NOW(), $4, $5, $6::jsonb, NOW(), NOW()
              FROM tasker.named_tasks nt JOIN tasker.task_namespaces tn USING (task_namespace_uuid)
             WHERE tn.name = $1 AND nt.name = $2 AND nt.version = $3
            RETURNING task_uuid
            """,
            [
                namespace, template.name, template.version, UUID().uuidString, correlation,
                PostgresJSON(raw: try context.jsonString()),
            ])[0].decode("task_uuid")
        try await admin.query(
            """
            INSERT INTO tasker.task_transitions (task_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
            VALUES ($1, 'steps_in_process', NULL, '{}', 1, true, NOW(), NOW())
            """, [task])
        var ids: [String: UUID] = [:]
        for name in steps {
            let id: UUID = try await admin.query(
                """
                WITH ns AS (
                    INSERT INTO tasker.named_steps (name, created_at, updated_at) VALUES ($1, NOW(), NOW())
                    ON CONFLICT (name) DO UPDATE SET updated_at = NOW() RETURNING named_step_uuid)
                INSERT INTO tasker.workflow_steps (task_uuid, named_step_uuid, retryable, max_attempts, created_at, updated_at)
                SELECT $2, named_step_uuid, true, 3, NOW(), NOW() FROM ns RETURNING workflow_step_uuid
                """, [name, task])[0].decode("workflow_step_uuid")
            try await admin.query(
                """
                INSERT INTO tasker.workflow_step_transitions (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
                VALUES ($1, 'pending', NULL, '{}', 1, true, NOW(), NOW())
                """, [id])
            ids[name] = id
        }
        for (parent, child) in edges {
            try await admin.query(
                """
                INSERT INTO tasker.workflow_step_edges (from_step_uuid, to_step_uuid, name, created_at, updated_at)
                VALUES ($1, $2, 'provides', NOW(), NOW())
                """, [ids[parent]!, ids[child]!])
        }
        return SeededTask(taskUUID: task, correlationID: correlation, steps: ids)
    }

    /// `pending→enqueued` committed, then the step message sent with notification (orchestration's order).
    func enqueue(_ task: SeededTask, _ step: String) async throws {
        try await transition(task[step], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
        let message = StepMessage(taskUUID: task.taskUUID, stepUUID: task[step], correlationID: task.correlationID)
        try await PGMQ.sendWithNotify(
            admin, queue: QueueNames.workerQueue(namespace: namespace),
            message: try PostgresJSON(message))
    }

    /// Writes (or extends) worker `worker`'s liveness lease for `duration`, as `WorkerLeaseService`
    /// does: a claim stamped with a worker uuid commits only under its unexpired lease.
    func holdLease(_ worker: UUID, for duration: Duration = .seconds(600)) async throws {
        try await WorkerLeaseRepository.renew(admin, worker: worker, hostname: "test", duration: duration)
    }

    /// Deletes worker `worker`'s lease: it is dead from now on, as far as crash recovery can tell.
    func dropLease(_ worker: UUID) async throws {
        try await WorkerLeaseRepository.release(admin, worker: worker)
    }

    /// What orchestration does with a successful result: `→complete`, `processed = true`.
    func completeLikeOrchestration(_ task: SeededTask, _ step: String) async throws {
        try await transition(task[step], from: "enqueued_for_orchestration", to: "complete", event: #"{"type":"Complete"}"#)
        try await admin.query(
            """
            UPDATE tasker.workflow_steps SET processed = true, processed_at = NOW(), in_process = false, updated_at = NOW()
             WHERE workflow_step_uuid = $1
            """, [task[step]])
    }

    /// Orchestration's 3-statement transition write (the one `SchemaTests` uses), with upstream metadata.
    func transition(_ step: UUID, from: String, to: String, event: String) async throws {
        let metadata = try JSONValue.object(["event": .string(event), "timestamp": .string("2026-11-23T00:00:00+00:00")]).jsonString()
        try await SchemaTests.transition(admin, step: step, from: from, to: to, metadata: metadata)
    }

    func state(_ step: UUID) async throws -> String {
        try await admin.query(
            """
            SELECT COALESCE((SELECT to_state FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1 AND most_recent), 'pending') AS s
            """, [step])[0].decode("s")
    }

    /// Waits until the step reaches one of `states`.
    func waitForState(_ step: UUID, _ states: Set<String>, timeout: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var last = ""
        while ContinuousClock.now < deadline {
            last = try await state(step)
            if states.contains(last) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("step \(step) still \(last), expected one of \(states.sorted())")
        throw TestSetupError("timed out waiting for step state")
    }

    func transitions(_ step: UUID) async throws -> [(to: String, from: String?, metadata: JSONValue)] {
        try await admin.query(
            """
            SELECT to_state, from_state, metadata FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1 ORDER BY sort_key
            """, [step]
        ).map { (try $0.decode("to_state"), try $0.decode("from_state"), try $0.decode("metadata")) }
    }

    func result(_ step: UUID) async throws -> StepExecutionResult {
        let raw: JSONValue = try await admin.query("SELECT results FROM tasker.workflow_steps WHERE workflow_step_uuid = $1", [step])[0]
            .decode("results")
        return try StepExecutionResult.decode(raw)
    }
}

extension HandlerRegistry {
    /// The built-ins plus `test.gate`, a handler that waits for the returned signal, then succeeds
    /// with `result` (a step held `in_progress` while a test changes the database under it).
    static func withGate(returning result: JSONValue) -> (HandlerRegistry, OneShotSignal) {
        let handlers = HandlerRegistry.withBuiltIns()
        let gate = OneShotSignal()
        handlers.register("test.gate") { _ in
            await gate.wait()
            return .success(result)
        }
        return (handlers, gate)
    }
}
