import Foundation
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Creates workflow steps and edges: at task creation, and dynamically for decision points
/// (the chosen steps) and batchable steps (`<worker_template>_<batch_id>` workers and their
/// convergence step), as upstream's `WorkflowStepCreator`, `DecisionPointService` and
/// `BatchProcessingService` do. Dynamic steps start without a transition (they read as `pending`).
enum StepCreation {
    /// Finds or creates `named_steps(name)` and inserts the workflow step with the template's
    /// retry policy; `inputs` = `handler.initialization`, or NULL when it is empty.
    static func createStep(
        _ c: isolated PostgresConnection, taskUUID: UUID, definition: StepDefinition,
        inputs override: JSONValue? = nil
    ) throws -> UUID {
        let named = try c.query(
            """
            WITH found AS (SELECT named_step_uuid FROM tasker.named_steps WHERE name = $1),
            made AS (
                INSERT INTO tasker.named_steps (name, created_at, updated_at)
                SELECT $1, NOW(), NOW() WHERE NOT EXISTS (SELECT 1 FROM found)
                ON CONFLICT DO NOTHING
                RETURNING named_step_uuid)
            SELECT named_step_uuid FROM found UNION ALL SELECT named_step_uuid FROM made
            """, [definition.name])
        let namedStep: UUID
        if let row = named.first {
            namedStep = try row.decode("named_step_uuid")
        } else {
            // A concurrent creator won the insert; its row is visible now.
            namedStep = try c.query(
                "SELECT named_step_uuid FROM tasker.named_steps WHERE name = $1",
                [definition.name])[0].decode("named_step_uuid")
        }
        var inputs: JSONValue? = override
        if inputs == nil, definition.handler.initialization != .emptyObject { inputs = definition.handler.initialization }
        let inputsText: String? = try inputs.map { value in try value.jsonString() }
        return try c.query(
            """
            INSERT INTO tasker.workflow_steps
                (task_uuid, named_step_uuid, retryable, max_attempts, inputs, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5::jsonb, NOW(), NOW())
            RETURNING workflow_step_uuid
            """,
            [
                taskUUID, namedStep, definition.retry.retryable, Int32(clamping: definition.retry.maxAttempts),
                inputsText.map(PostgresJSON.init(raw:)),
            ])[0].decode("workflow_step_uuid")
    }

    /// Inserts the edge `from → to` (`from` is the parent).
    static func createEdge(_ c: isolated PostgresConnection, from: UUID, to: UUID, name: String) throws(PostgresError) {
        try c.query(
            """
            INSERT INTO tasker.workflow_step_edges (from_step_uuid, to_step_uuid, name, created_at, updated_at)
            VALUES ($1, $2, $3, NOW(), NOW())
            """, [from, to, name])
    }

    // MARK: Decision points

    /// Creates the steps of a `create_steps` decision outcome and their edges: each dependency edge
    /// comes from the created step of that name, else from the decision step; a deferred
    /// convergence step only gets edges from the steps created here. Returns the created steps.
    static func createDecisionSteps(
        _ c: isolated PostgresConnection, taskUUID: UUID, decisionStep: UUID,
        decisionName: String, requested: [String], graph: WorkflowGraph
    ) throws -> [String: UUID] {
        let definitions = try graph.stepsToCreate(decision: decisionName, requested: requested, decisionStep: decisionStep)
        var created: [String: UUID] = [:]
        for definition in definitions {
            created[definition.name] = try createStep(c, taskUUID: taskUUID, definition: definition)
        }
        for definition in definitions {
            for dependency in definition.dependencies {
                let parent: UUID
                if let made = created[dependency] {
                    parent = made
                } else if definition.type == .deferredConvergence {
                    continue
                } else {
                    parent = decisionStep
                }
                try createEdge(c, from: parent, to: created[definition.name]!, name: "provides")
            }
        }
        return created
    }

    // MARK: Batch processing

    /// Creates the batch workers of a batchable step's outcome (one placeholder no-op worker
    /// `<template>_000` for `no_batches`), the deferred convergence steps that depend on the
    /// worker template, and the edges `batchable → worker` (`batch_dependency`) and
    /// `worker → convergence` (`worker_to_convergence`). Idempotent: nothing is created when the
    /// batchable step already has workers.
    static func createBatchWorkers(
        _ c: isolated PostgresConnection, taskUUID: UUID, batchableStep: UUID,
        batchableName: String, outcome: BatchProcessingOutcome,
        template: TaskTemplate
    ) throws -> [String: UUID] {
        let existing: Int = try c.query(
            """
            SELECT count(*) AS n FROM tasker.workflow_step_edges WHERE from_step_uuid = $1 AND name = 'batch_dependency'
            """, [batchableStep])[0].decode("n")
        if existing > 0 { return [:] }
        let workerTemplateName: String
        let cursors: [CursorConfig]
        let isNoOp: Bool
        switch outcome {
        case .noBatches:
            guard let name = template.step(named: batchableName)?.handler.initialization["worker_template_name"]?.stringValue
            else {
                throw OrchestrationError.invalidBatchOutcome(
                    step: batchableStep, reason: "batchable step '\(batchableName)' missing worker_template_name")
            }
            workerTemplateName = name
            cursors = [CursorConfig(batchID: "000", startCursor: 0, endCursor: 0, batchSize: 0)]
            isNoOp = true
        case .createBatches(let name, _, let configs, _):
            guard !configs.isEmpty else {
                throw OrchestrationError.invalidBatchOutcome(
                    step: batchableStep, reason: "cursor_configs cannot be empty for CreateBatches outcome")
            }
            workerTemplateName = name
            cursors = configs
            isNoOp = false
        }
        guard let workerTemplate = template.step(named: workerTemplateName) else {
            throw OrchestrationError.invalidBatchOutcome(
                step: batchableStep,
                reason: "worker template not found: \(workerTemplateName)")
        }
        guard workerTemplate.type == .batchWorker, let batchConfig = workerTemplate.batchConfig else {
            throw OrchestrationError.invalidBatchOutcome(
                step: batchableStep, reason: "template \(workerTemplateName) is not a batch_worker step with batch_config")
        }
        var created: [String: UUID] = [:]
        var workers: [UUID] = []
        for cursor in cursors {
            var worker = workerTemplate
            worker.name = "\(workerTemplate.name)_\(cursor.batchID)"
            worker.type = .standard
            worker.dependencies = [batchableName]
            worker.batchConfig = nil
            var inputs: [String: JSONValue] = [:]
            if case .object(let initialization) = workerTemplate.handler.initialization { inputs = initialization }
            inputs["cursor"] = try JSONValue(encoding: cursor)
            inputs["batch_metadata"] = [
                "cursor_field": .string(batchConfig.cursorField),
                "failure_strategy": .string(batchConfig.failureStrategy.rawValue),
            ]
            inputs["is_no_op"] = .bool(isNoOp)
            inputs["__template_step_name"] = .string(workerTemplate.name)
            let uuid = try createStep(c, taskUUID: taskUUID, definition: worker, inputs: .object(inputs))
            created[worker.name] = uuid
            workers.append(uuid)
        }
        for convergence in WorkflowGraph(template).deferredConvergenceSteps
        where convergence.dependencies.contains(workerTemplateName) {
            let uuid = try createStep(c, taskUUID: taskUUID, definition: convergence)
            created[convergence.name] = uuid
            for worker in workers { try createEdge(c, from: worker, to: uuid, name: "worker_to_convergence") }
        }
        for worker in workers { try createEdge(c, from: batchableStep, to: worker, name: "batch_dependency") }
        return created
    }
}
