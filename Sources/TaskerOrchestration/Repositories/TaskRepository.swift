import Foundation
import TaskerModel
import TaskerPostgres
import TaskerStore

/// A task as orchestration needs it: identity, template coordinates, correlation id.
struct TaskIdentity: Sendable, Equatable {
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
struct StepReadiness: Sendable, Equatable {
    public var stepUUID: UUID
    public var name: String
    public var currentState: String
    var readyForExecution: Bool
}

/// The task SQL: creation from a template (one transaction), lookups, readiness and execution
/// context through Tasker's SQL functions.
enum TaskRepository {
    /// Creates the task, its initial steps and their `provides` edges, and the `NULL→pending`
    /// transitions of the task (owned by `processorUUID`) and of every step, in the caller's
    /// transaction (upstream `TaskInitializer::create_task_from_request`).
    ///
    /// Four statements whatever the number of steps: the task with its transition, the missing
    /// `named_steps`, the steps, then their edges and transitions.
    static func createTask(
        _ c: isolated PostgresConnection, request: TaskRequest, template: TaskTemplate,
        processorUUID: UUID
    ) throws -> CreatedTask {
        let correlationID = request.correlationID ?? UUID.v7()
        let inserted: UUID
        do {
            // strict: template + context; caller_provided: the idempotency key; always_unique: a new uuid.
            let rows = try c.query(
                Statements.createTask,
                try createTaskParameters(request, correlationID: correlationID, processorUUID: processorUUID))
            inserted = try createdTaskUUID(rows, request: request)
        } catch let error as PostgresError {
            guard error.isUniqueViolation else { throw error }
            throw duplicateTask(request)
        }
        let initial = WorkflowGraph(template).initialSteps
        guard !initial.isEmpty else { return CreatedTask(taskUUID: inserted, correlationID: correlationID, steps: [:]) }
        // Separate statement: a name a concurrent creator inserted is visible to the next one.
        try c.query(Statements.ensureNamedSteps, ensureNamedStepsParameters(initial))
        var steps = try createdSteps(c.query(Statements.createSteps, try createStepsParameters(taskUUID: inserted, initial: initial)))
        for definition in initial where steps[definition.name] == nil {
            steps[definition.name] = try StepCreation.createStep(c, taskUUID: inserted, definition: definition)
        }
        try c.query(Statements.createEdgesAndTransitions, edgesAndTransitionsParameters(initial: initial, steps: steps))
        return CreatedTask(taskUUID: inserted, correlationID: correlationID, steps: steps)
    }

    // The parts of `createTask`, also sent pipelined by `TaskInitializationService`.

    static func createTaskParameters(
        _ request: TaskRequest, correlationID: UUID,
        processorUUID: UUID
    ) throws -> [any PostgresEncodable] {
        let contextText = try request.context.jsonString()
        let tagsText = try JSONValue.array(request.tags.map(JSONValue.string)).jsonString()
        return [
            request.namespace, request.name, request.version, request.initiator, request.sourceSystem, request.reason,
            PostgresJSON(raw: tagsText), PostgresJSON(raw: contextText), request.idempotencyKey,
            Int32(clamping: request.priority), correlationID, request.parentCorrelationID, processorUUID,
            PostgresJSON(raw: TransitionRepository.initialMetadata),
        ]
    }

    /// The task created by `Statements.createTask`; no row: the template is not registered.
    static func createdTaskUUID(_ rows: PostgresQueryResult, request: TaskRequest) throws -> UUID {
        guard let row = rows.first else {
            throw OrchestrationError.templateNotFound(
                namespace: request.namespace, name: request.name,
                version: request.version)
        }
        return try row.decode("task_uuid")
    }

    static func duplicateTask(_ request: TaskRequest) -> OrchestrationError {
        .duplicateTask(namespace: request.namespace, name: request.name, version: request.version, existingTaskUUID: nil)
    }

    static func ensureNamedStepsParameters(_ initial: [StepDefinition]) -> [any PostgresEncodable] {
        [PostgresArrayLiteral(initial.map { Optional.some($0.name) })]
    }

    static func createStepsParameters(taskUUID: UUID, initial: [StepDefinition]) throws -> [any PostgresEncodable] {
        let inputs: [String?] = try initial.map { definition in
            definition.handler.initialization == .emptyObject ? nil : try definition.handler.initialization.jsonString()
        }
        return [
            taskUUID, PostgresArrayLiteral(initial.map { Optional.some($0.name) }),
            PostgresArrayLiteral(initial.map(\.retry.retryable)),
            PostgresArrayLiteral(initial.map { Int32(clamping: $0.retry.maxAttempts) }), PostgresArrayLiteral(inputs),
        ]
    }

    /// The steps `Statements.createSteps` made, by name.
    static func createdSteps(_ rows: PostgresQueryResult) throws(PostgresError) -> [String: UUID] {
        var steps: [String: UUID] = [:]
        for row in rows { steps[try row.decode("name")] = try row.decode("workflow_step_uuid") }
        return steps
    }

    /// The `provides` edges between `steps` (every initial step made) and their transitions.
    static func edgesAndTransitionsParameters(initial: [StepDefinition], steps: [String: UUID]) -> [any PostgresEncodable] {
        var parents: [UUID] = []
        var children: [UUID] = []
        for definition in initial {
            for dependency in definition.dependencies {
                guard let parent = steps[dependency], let child = steps[definition.name] else { continue }
                parents.append(parent)
                children.append(child)
            }
        }
        return [
            PostgresArrayLiteral(parents), PostgresArrayLiteral(children),
            PostgresArrayLiteral(initial.map { steps[$0.name]! }), PostgresJSON(raw: TransitionRepository.initialMetadata),
        ]
    }

    /// The task's template coordinates and correlation id.
    public static func identity(_ c: isolated PostgresConnection, taskUUID: UUID) throws -> TaskIdentity {
        let rows = try c.query(Statements.identity, [taskUUID])
        guard let row = rows.first else { throw OrchestrationError.taskNotFound(taskUUID) }
        return TaskIdentity(
            taskUUID: try row.decode("task_uuid"), correlationID: try row.decode("correlation_id"),
            namespace: try row.decode("namespace_name"), name: try row.decode("name"),
            version: try row.decode("version"))
    }

    /// `tasker.get_step_readiness_status(task)`.
    public static func readiness(_ c: isolated PostgresConnection, taskUUID: UUID) throws(PostgresError) -> [StepReadiness] {
        try readiness(c.query(Statements.readiness, [taskUUID]))
    }

    /// `readiness` as a pipeline statement (decode with `readiness(_:)`).
    static func readinessStatement(taskUUID: UUID) -> PipelineStatement { .prepared(Statements.readiness, [taskUUID]) }

    /// The rows of a `readiness` result.
    static func readiness(_ rows: PostgresQueryResult) throws(PostgresError) -> [StepReadiness] {
        try rows.map { row throws(PostgresError) in
            StepReadiness(
                stepUUID: try row.decode("workflow_step_uuid"), name: try row.decode("name"),
                currentState: try row.decode("current_state"),
                readyForExecution: try row.decode("ready_for_execution"))
        }
    }

    /// `execution_status` as `tasker.get_task_execution_contexts_batch` derives it from the rows of
    /// `get_step_readiness_status` (which it calls): computed here from rows already read, so an
    /// evaluation reads readiness once. `executionStatus(_:taskUUID:)` asks the database itself.
    static func executionStatus(of steps: [StepReadiness]) -> String {
        var error = 0
        var ready = 0
        var processing = 0
        var done = 0
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
    static func executionStatus(_ c: isolated PostgresConnection, taskUUID: UUID) throws(PostgresError) -> String {
        let rows = try c.query("SELECT execution_status FROM tasker.get_task_execution_context($1)", [taskUUID])
        return try rows.first?.decode("execution_status") ?? "waiting_for_dependencies"
    }

    /// Marks a finished task: `complete = true`, `completed_at`, `updated_at`.
    static func markComplete(_ c: isolated PostgresConnection, taskUUID: UUID) throws(PostgresError) {
        try c.query(Statements.markComplete, [taskUUID])
    }

    /// `markComplete` as a pipeline statement.
    static func markCompleteStatement(taskUUID: UUID) -> PipelineStatement { .prepared(Statements.markComplete, [taskUUID]) }

    /// `lock` as a pipeline statement.
    static func lockStatement(taskUUID: UUID) -> PipelineStatement { .prepared(Statements.lock, [taskUUID]) }

    /// Locks the task row (finalization).
    static func lock(_ c: isolated PostgresConnection, taskUUID: UUID) throws(PostgresError) {
        try c.query(Statements.lock, [taskUUID])
    }

    /// The hot statements, prepared once per connection.
    enum Statements {
        /// The task (no row when the template is not registered) and its `NULL→pending` transition.
        static let createTask = PreparedStatement(
            """
            WITH named AS (
                SELECT nt.named_task_uuid, nt.identity_strategy::text AS strategy
                  FROM tasker.named_tasks nt
                  JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
                 WHERE tn.name = $1::text AND nt.name = $2::text AND nt.version = $3::text),
            task AS (
                INSERT INTO tasker.tasks
                    (named_task_uuid, complete, requested_at, initiator, source_system, reason, tags, context,
                     identity_hash, priority, correlation_id, parent_correlation_id, created_at, updated_at)
                SELECT named_task_uuid, false, NOW(), $4::text, $5::text, $6::text, $7::jsonb, $8::jsonb,
                       CASE WHEN strategy = 'always_unique' THEN tasker.uuid_generate_v7()::text
                            WHEN strategy = 'caller_provided' AND $9::text IS NOT NULL THEN $9::text
                            ELSE md5(named_task_uuid::text || ':' || $8::jsonb::text) END,
                       $10::integer, $11::uuid, $12::uuid, NOW(), NOW()
                  FROM named
                RETURNING task_uuid),
            transition AS (
                INSERT INTO tasker.task_transitions
                    (task_uuid, to_state, from_state, metadata, sort_key, most_recent, processor_uuid, created_at, updated_at)
                SELECT task_uuid, 'pending', NULL, $14::jsonb, 1, true, $13::uuid, NOW(), NOW() FROM task)
            SELECT task_uuid FROM task
            """)
        static let ensureNamedSteps = PreparedStatement(
            """
            INSERT INTO tasker.named_steps (name, created_at, updated_at)
            SELECT DISTINCT n, NOW(), NOW() FROM unnest($1::text[]) AS n
             WHERE NOT EXISTS (SELECT 1 FROM tasker.named_steps ns WHERE ns.name = n)
            ON CONFLICT DO NOTHING
            """)
        /// The steps in template order (their uuid v7 keep it), with the template's retry policy.
        static let createSteps = PreparedStatement(
            """
            WITH input AS (
                SELECT * FROM unnest($2::text[], $3::boolean[], $4::integer[], $5::text[])
                       WITH ORDINALITY AS i(name, retryable, max_attempts, inputs, ord)),
            made AS (
                INSERT INTO tasker.workflow_steps
                    (task_uuid, named_step_uuid, retryable, max_attempts, inputs, created_at, updated_at)
                SELECT $1::uuid, ns.named_step_uuid, i.retryable, i.max_attempts, i.inputs::jsonb, NOW(), NOW()
                  FROM input i JOIN tasker.named_steps ns ON ns.name = i.name
                 ORDER BY i.ord
                RETURNING workflow_step_uuid, named_step_uuid)
            SELECT made.workflow_step_uuid, ns.name FROM made JOIN tasker.named_steps ns USING (named_step_uuid)
            """)
        /// The `provides` edges (parents, children) and every step's `NULL→pending` transition.
        static let createEdgesAndTransitions = PreparedStatement(
            """
            WITH edges AS (
                INSERT INTO tasker.workflow_step_edges (from_step_uuid, to_step_uuid, name, created_at, updated_at)
                SELECT e.parent, e.child, 'provides', NOW(), NOW() FROM unnest($1::uuid[], $2::uuid[]) AS e(parent, child))
            INSERT INTO tasker.workflow_step_transitions
                (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
            SELECT s.step, 'pending', NULL, $4::jsonb, 1, true, NOW(), NOW()
              FROM unnest($3::uuid[]) WITH ORDINALITY AS s(step, ord) ORDER BY s.ord
            """)
        static let identity = PreparedStatement(
            """
            SELECT t.task_uuid, t.correlation_id, tn.name AS namespace_name, nt.name, nt.version
              FROM tasker.tasks t
              JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
              JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
             WHERE t.task_uuid = $1::uuid
            """)
        static let readiness = PreparedStatement(
            """
            SELECT workflow_step_uuid, name, current_state, ready_for_execution
              FROM tasker.get_step_readiness_status($1::uuid)
             ORDER BY workflow_step_uuid
            """)
        static let markComplete = PreparedStatement(
            """
            UPDATE tasker.tasks SET complete = true, completed_at = NOW(), updated_at = NOW() WHERE task_uuid = $1::uuid
            """)
        static let lock = PreparedStatement("SELECT task_uuid FROM tasker.tasks WHERE task_uuid = $1::uuid FOR UPDATE")
    }

    /// `tasker.get_next_ready_tasks(limit)`: tasks with work to (re)start, with their current state.
    static func nextReadyTasks(_ c: isolated PostgresConnection, limit: Int) throws(PostgresError) -> [(UUID, String)] {
        try c.query(
            "SELECT task_uuid, current_state FROM tasker.get_next_ready_tasks($1::integer)",
            [Int32(clamping: limit)]
        ).map { row throws(PostgresError) in
            (try row.decode("task_uuid"), try row.decode("current_state"))
        }
    }
}
