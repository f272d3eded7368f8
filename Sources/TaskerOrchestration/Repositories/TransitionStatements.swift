import TaskerModel
import TaskerPostgres

extension TransitionRepository {
    /// The hot statements, prepared once per connection. Every step move is the compare-and-set
    /// the worker writes too (`StepTransitionSQL.move`); the task's is its twin on
    /// `tasker.task_transitions`. Their final texts are in `Tests/Fixtures/statements/`
    /// (`catalog`).
    enum Statements {
        /// Step $1 moving from state $2 to $3 with metadata $4.
        private static let moveStep = StepTransitionSQL.move(
            step: "$1::uuid", to: "$3::text", metadata: "$4", when: [StepTransitionSQL.inState("$2::text")])

        /// Task $1 moving from $2 to $3 with metadata $4 and processor $5.
        private static let moveTask = """
            retired AS (
                UPDATE tasker.task_transitions SET most_recent = false, updated_at = NOW()
                 WHERE task_uuid = $1::uuid AND most_recent AND to_state = $2::text
                RETURNING to_state, sort_key),
            moved AS (
                INSERT INTO tasker.task_transitions
                    (task_uuid, to_state, from_state, metadata, sort_key, most_recent, processor_uuid, created_at, updated_at)
                SELECT $1::uuid, $3::text, r.to_state, $4::jsonb, r.sort_key + 1, true, $5::uuid, NOW(), NOW() FROM retired r
                RETURNING sort_key)
            """

        /// The pipelined forms' assertion: selects from `rows` (a CTE), raising `division_by_zero`
        /// (SQLSTATE 22012, `PostgresError.isFailedAssertion`) when it is empty, so that a lost
        /// compare-and-set stops a pipeline before its `COMMIT`.
        private static func failUnlessAny(_ rows: String) -> String {
            "SELECT 1 / (SELECT count(*)::integer FROM \(rows)) AS moved"
        }

        /// Step $1 `pending → enqueued` with metadata $2, and its message $4 sent to queue $3 with
        /// `tasker.pgmq_send_with_notify` only when it moved (`msg_id`; no row when it did not).
        static let enqueueStep = PreparedStatement(
            """
            WITH \(StepTransitionSQL.move(step: "$1::uuid", to: "'enqueued'", metadata: "$2", when: [StepTransitionSQL.inState("'pending'")]))
            SELECT tasker.pgmq_send_with_notify($3::text, $4::jsonb, 0) AS msg_id FROM moved
            """)
        /// `enqueueStep` when a broker carries the step messages (published after the commit): step
        /// $1, metadata $2; `msg_id` 0 when it moved.
        static let enqueueStepWithoutSend = PreparedStatement(
            """
            WITH \(StepTransitionSQL.move(step: "$1::uuid", to: "'enqueued'", metadata: "$2", when: [StepTransitionSQL.inState("'pending'")]))
            SELECT 0::bigint AS msg_id FROM moved
            """)
        /// `enqueueStep` raising `division_by_zero` when the step was not `pending` (no message sent).
        static let enqueueStepAsserted = PreparedStatement(
            """
            WITH \(StepTransitionSQL.move(step: "$1::uuid", to: "'enqueued'", metadata: "$2", when: [StepTransitionSQL.inState("'pending'")])),
            sent AS MATERIALIZED (
                SELECT tasker.pgmq_send_with_notify($3::text, $4::jsonb, 0) AS msg_id FROM moved)
            \(failUnlessAny("sent WHERE msg_id IS NOT NULL"))
            """)
        /// `enqueueStepWithoutSend` raising `division_by_zero` when the step was not `pending`.
        static let enqueueStepAssertedWithoutSend = PreparedStatement(
            """
            WITH \(StepTransitionSQL.move(step: "$1::uuid", to: "'enqueued'", metadata: "$2", when: [StepTransitionSQL.inState("'pending'")]))
            \(failUnlessAny("moved"))
            """)
        /// Step $1 from $2 to `complete` with metadata $3, marked processed (`processed`,
        /// `processed_at`, `in_process = false`) only when it moved.
        static let completeStep = PreparedStatement(
            """
            WITH \(StepTransitionSQL.move(step: "$1::uuid", to: "'complete'", metadata: "$3", when: [StepTransitionSQL.inState("$2::text")])),
            processed AS (
                UPDATE tasker.workflow_steps
                   SET processed = true, processed_at = NOW(), in_process = false, updated_at = NOW()
                 WHERE workflow_step_uuid = $1::uuid AND EXISTS (SELECT 1 FROM moved))
            SELECT sort_key FROM moved
            """)
        static let currentTaskState = PreparedStatement(
            """
            SELECT to_state FROM tasker.task_transitions WHERE task_uuid = $1::uuid AND most_recent
            """)
        static let currentStepState = PreparedStatement(
            """
            SELECT to_state FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1::uuid AND most_recent
            """)
        static let transitionTask = PreparedStatement("WITH \(moveTask)\nSELECT sort_key FROM moved")
        static let transitionStep = PreparedStatement("WITH \(moveStep)\nSELECT sort_key FROM moved")
        /// `transitionTask` raising `division_by_zero` when the task was not in `$2`.
        static let transitionTaskAsserted = PreparedStatement("WITH \(moveTask)\n\(failUnlessAny("moved"))")
        /// `transitionStep` raising `division_by_zero` when the step was not in `$2`.
        static let transitionStepAsserted = PreparedStatement("WITH \(moveStep)\n\(failUnlessAny("moved"))")
        /// The first transition of a step that has none (a racing creator's row wins: no row returned).
        static let firstStepTransition = PreparedStatement(
            """
            INSERT INTO tasker.workflow_step_transitions
                (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
            SELECT $1::uuid, $3::text, $2::text, $4::jsonb, 1, true, NOW(), NOW()
             WHERE NOT EXISTS (SELECT 1 FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1::uuid)
            ON CONFLICT (workflow_step_uuid, most_recent) WHERE most_recent = true DO NOTHING
            RETURNING sort_key
            """)

        /// Every statement above by name, with its parameters in binding order (pinned by
        /// `StatementCatalogTests`).
        static let catalog: [NamedStatement] = [
            NamedStatement(
                name: "orchestration.enqueue_step", prepared: enqueueStep, parameters: ["step_uuid", "metadata", "queue", "message"]),
            NamedStatement(
                name: "orchestration.enqueue_step.broker", prepared: enqueueStepWithoutSend, parameters: ["step_uuid", "metadata"]),
            NamedStatement(
                name: "orchestration.enqueue_step.asserted", prepared: enqueueStepAsserted,
                parameters: ["step_uuid", "metadata", "queue", "message"]),
            NamedStatement(
                name: "orchestration.enqueue_step.asserted.broker", prepared: enqueueStepAssertedWithoutSend,
                parameters: ["step_uuid", "metadata"]),
            NamedStatement(
                name: "orchestration.complete_step", prepared: completeStep, parameters: ["step_uuid", "from_state", "metadata"]),
            NamedStatement(name: "orchestration.current_task_state", prepared: currentTaskState, parameters: ["task_uuid"]),
            NamedStatement(name: "orchestration.current_step_state", prepared: currentStepState, parameters: ["step_uuid"]),
            NamedStatement(
                name: "orchestration.transition_task", prepared: transitionTask,
                parameters: ["task_uuid", "from_state", "to_state", "metadata", "processor_uuid"]),
            NamedStatement(
                name: "orchestration.transition_task.asserted", prepared: transitionTaskAsserted,
                parameters: ["task_uuid", "from_state", "to_state", "metadata", "processor_uuid"]),
            NamedStatement(
                name: "orchestration.transition_step", prepared: transitionStep,
                parameters: ["step_uuid", "from_state", "to_state", "metadata"]),
            NamedStatement(
                name: "orchestration.transition_step.asserted", prepared: transitionStepAsserted,
                parameters: ["step_uuid", "from_state", "to_state", "metadata"]),
            NamedStatement(
                name: "orchestration.first_step_transition", prepared: firstStepTransition,
                parameters: ["step_uuid", "from_state", "to_state", "metadata"]),
        ]
    }
}
