import Foundation
import TaskerWorker

/// A task as orchestration needs it: identity, template coordinates, correlation id.
public struct TaskIdentity: Sendable, Equatable {
    public var taskUUID: UUID
    public var correlationID: UUID
    public var namespace: String
    public var name: String
    public var version: String
}

/// What `createTask` wrote.
public struct CreatedTask: Sendable, Equatable {
    public var taskUUID: UUID
    public var correlationID: UUID
    /// The workflow step of each initial template step, by name.
    public var steps: [String: UUID]
}

/// One row of `tasker.get_step_readiness_status`.
public struct StepReadiness: Sendable, Equatable {
    public var stepUUID: UUID
    public var name: String
    public var currentState: String
    public var readyForExecution: Bool
}

/// The task SQL: creation from a template (one transaction), lookups, readiness and execution
/// context through Tasker's SQL functions.
public enum TaskRepository {
    /// Creates the task, its initial steps and their `provides` edges, and the `NULL→pending`
    /// transitions of the task (owned by `processorUUID`) and of every step, in the caller's
    /// transaction (upstream `TaskInitializer::create_task_from_request`).
    static func createTask(_ c: isolated PostgresConnection, request: TaskRequest, template: TaskTemplate,
                           processorUUID: UUID) throws -> CreatedTask {
        let named = try c.query("""
            SELECT nt.named_task_uuid, nt.identity_strategy::text AS identity_strategy
              FROM tasker.named_tasks nt
              JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
             WHERE tn.name = $1 AND nt.name = $2 AND nt.version = $3
            """, [request.namespace, request.name, request.version])
        guard let namedRow = named.first else {
            throw OrchestrationError.templateNotFound(namespace: request.namespace, name: request.name,
                                                      version: request.version)
        }
        let namedTaskUUID: UUID = try namedRow.decode("named_task_uuid")
        let strategy: String = try namedRow.decode("identity_strategy")
        let correlationID = request.correlationID ?? UUID.v7()
        let contextText = try request.context.jsonString()
        let tagsText = try JSONValue.array(request.tags.map(JSONValue.string)).jsonString()
        // strict: template + context; caller_provided: the idempotency key; always_unique: a new uuid.
        let identity: String
        switch strategy {
        case "always_unique": identity = "uuid"
        case "caller_provided" where request.idempotencyKey != nil: identity = "key"
        default: identity = "hash"
        }
        let inserted: UUID
        do {
            inserted = try c.query("""
                INSERT INTO tasker.tasks
                    (named_task_uuid, complete, requested_at, initiator, source_system, reason, tags, context,
                     identity_hash, priority, correlation_id, parent_correlation_id, created_at, updated_at)
                VALUES ($1, false, NOW(), $2, $3, $4, $5::jsonb, $6::jsonb,
                        CASE $7 WHEN 'uuid' THEN tasker.uuid_generate_v7()::text
                                WHEN 'key' THEN $8
                                ELSE md5($1::text || ':' || $6::jsonb::text) END,
                        $9, $10, $11, NOW(), NOW())
                RETURNING task_uuid
                """, [namedTaskUUID, request.initiator, request.sourceSystem, request.reason, PostgresJSON(raw: tagsText),
                      PostgresJSON(raw: contextText), identity, request.idempotencyKey, Int32(clamping: request.priority),
                      correlationID, request.parentCorrelationID])[0].decode("task_uuid")
        } catch {
            guard error.isUniqueViolation else { throw error }
            throw OrchestrationError.duplicateTask(namespace: request.namespace, name: request.name,
                                                   version: request.version, existingTaskUUID: nil)
        }
        try TransitionRepository.insertInitialTaskTransition(c, taskUUID: inserted, processorUUID: processorUUID)
        let initial = WorkflowGraph(template).initialSteps
        var steps: [String: UUID] = [:]
        for definition in initial {
            let step = try StepCreation.createStep(c, taskUUID: inserted, definition: definition)
            steps[definition.name] = step
        }
        for definition in initial {
            for dependency in definition.dependencies {
                guard let parent = steps[dependency], let child = steps[definition.name] else { continue }
                try StepCreation.createEdge(c, from: parent, to: child, name: "provides")
            }
        }
        for definition in initial {
            try TransitionRepository.insertInitialStepTransition(c, stepUUID: steps[definition.name]!)
        }
        return CreatedTask(taskUUID: inserted, correlationID: correlationID, steps: steps)
    }

    /// The task's template coordinates and correlation id.
    public static func identity(_ c: isolated PostgresConnection, taskUUID: UUID) throws -> TaskIdentity {
        let rows = try c.query(Statements.identity, [taskUUID])
        guard let row = rows.first else { throw OrchestrationError.taskNotFound(taskUUID) }
        return TaskIdentity(taskUUID: try row.decode("task_uuid"), correlationID: try row.decode("correlation_id"),
                            namespace: try row.decode("namespace_name"), name: try row.decode("name"),
                            version: try row.decode("version"))
    }

    /// `tasker.get_step_readiness_status(task)`.
    public static func readiness(_ c: isolated PostgresConnection, taskUUID: UUID) throws(PostgresError) -> [StepReadiness] {
        try c.query(Statements.readiness, [taskUUID]).map { row throws(PostgresError) in
            StepReadiness(stepUUID: try row.decode("workflow_step_uuid"), name: try row.decode("name"),
                          currentState: try row.decode("current_state"),
                          readyForExecution: try row.decode("ready_for_execution"))
        }
    }

    /// `execution_status` as `tasker.get_task_execution_contexts_batch` derives it from the rows of
    /// `get_step_readiness_status` (which it calls): computed here from rows already read, so an
    /// evaluation reads readiness once. `executionStatus(_:taskUUID:)` asks the database itself.
    public static func executionStatus(of steps: [StepReadiness]) -> String {
        var error = 0, ready = 0, processing = 0, done = 0
        for step in steps {
            switch step.currentState {
            case "error": error += 1
            case "enqueued", "in_progress", "enqueued_for_orchestration", "enqueued_as_error_for_orchestration":
                processing += 1
            case "complete", "resolved_manually": done += 1
            default: break
            }
            if step.readyForExecution { ready += 1 }
        }
        if error > 0 { return "blocked_by_failures" }
        if ready > 0 { return "has_ready_steps" }
        if processing > 0 { return "processing" }
        if !steps.isEmpty && done == steps.count { return "all_complete" }
        return "waiting_for_dependencies"
    }

    /// `execution_status` of `tasker.get_task_execution_context(task)`: `has_ready_steps`,
    /// `processing`, `all_complete`, `blocked_by_failures` or `waiting_for_dependencies`.
    public static func executionStatus(_ c: isolated PostgresConnection, taskUUID: UUID) throws(PostgresError) -> String {
        let rows = try c.query("SELECT execution_status FROM tasker.get_task_execution_context($1)", [taskUUID])
        return try rows.first?.decode("execution_status") ?? "waiting_for_dependencies"
    }

    /// Marks a finished task: `complete = true`, `completed_at`, `updated_at`.
    static func markComplete(_ c: isolated PostgresConnection, taskUUID: UUID) throws(PostgresError) {
        try c.query(Statements.markComplete, [taskUUID])
    }

    /// Locks the task row (finalization).
    static func lock(_ c: isolated PostgresConnection, taskUUID: UUID) throws(PostgresError) {
        try c.query(Statements.lock, [taskUUID])
    }

    /// The hot statements, prepared once per connection.
    enum Statements {
        static let identity = PreparedStatement("""
            SELECT t.task_uuid, t.correlation_id, tn.name AS namespace_name, nt.name, nt.version
              FROM tasker.tasks t
              JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
              JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
             WHERE t.task_uuid = $1::uuid
            """)
        static let readiness = PreparedStatement("""
            SELECT workflow_step_uuid, name, current_state, ready_for_execution
              FROM tasker.get_step_readiness_status($1::uuid)
             ORDER BY workflow_step_uuid
            """)
        static let markComplete = PreparedStatement("""
            UPDATE tasker.tasks SET complete = true, completed_at = NOW(), updated_at = NOW() WHERE task_uuid = $1::uuid
            """)
        static let lock = PreparedStatement("SELECT task_uuid FROM tasker.tasks WHERE task_uuid = $1::uuid FOR UPDATE")
    }

    /// `tasker.get_next_ready_tasks(limit)`: tasks with work to (re)start, with their current state.
    public static func nextReadyTasks(_ c: isolated PostgresConnection, limit: Int) throws(PostgresError) -> [(UUID, String)] {
        try c.query("SELECT task_uuid, current_state FROM tasker.get_next_ready_tasks($1::integer)",
                    [Int32(clamping: limit)]).map { row throws(PostgresError) in
            (try row.decode("task_uuid"), try row.decode("current_state"))
        }
    }
}
