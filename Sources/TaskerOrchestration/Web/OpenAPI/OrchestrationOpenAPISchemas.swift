import TaskerHTTP
import TaskerModel

/// The `components.schemas` of ``OrchestrationOpenAPIDocument``: one schema per body the task API
/// sends or reads, under upstream's schema names (`schemas/generated/orchestration-openapi.json` of
/// tasker-core; `OrchestrationOpenAPITests` checks the names), with the field names, nesting and
/// nullability of the documents `TaskQueryStatements`, `DLQStatements` and `TaskSummaryStatements`
/// build. Where ours differ from upstream's document they describe what this server sends: `ApiError`
/// is the `{"error":{"code","message"}}` body (upstream documents its Rust enum), and the DLQ's
/// timestamps are upstream's `NaiveDateTime`s (no zone), documented as strings without `date-time`.
enum OrchestrationOpenAPISchemas {
    typealias S = OpenAPISchema

    /// A timestamp without a zone (upstream's `NaiveDateTime` fields: DLQ rows, step readiness).
    static let naiveDateTime: JSONValue = [
        "type": "string", "description": "UTC date and time without a zone (YYYY-MM-DDTHH:MM:SS.ffffff)",
    ]
    static let nullableNaiveDateTime: JSONValue = [
        "type": ["string", "null"], "description": "UTC date and time without a zone (YYYY-MM-DDTHH:MM:SS.ffffff)",
    ]

    /// Every schema.
    static var all: JSONValue {
        .object(
            tasks.merging(steps) { a, _ in a }.merging(summary) { a, _ in a }
                .merging(OrchestrationOpenAPISchemas.dlq) { a, _ in a }.merging(health) { a, _ in a }
                .merging(S.apiError) { a, _ in a })
    }

    static let tasks: [String: JSONValue] = [
        "TaskRequest": S.object(
            [
                "namespace": S.string, "name": S.string, "version": S.string, "context": S.anyValue,
                "initiator": S.string, "source_system": S.string, "reason": S.string, "tags": S.strings,
                "requested_at": S.dateTime, "correlation_id": S.uuid, "parent_correlation_id": S.nullableUUID,
                "priority": S.nullableInt32, "idempotency_key": S.nullableString,
                "options": ["type": ["object", "null"]],
            ],
            optional: [
                "context", "initiator", "source_system", "reason", "tags", "requested_at", "correlation_id",
                "parent_correlation_id", "priority", "idempotency_key", "options",
            ],
            description: "The body of POST /v1/tasks: the template (namespace, name, version) and the task's context."),
        "TaskResponse": S.object(
            [
                "task_uuid": S.string, "name": S.string, "namespace": S.string, "version": S.string, "status": S.string,
                "created_at": S.dateTime, "updated_at": S.dateTime, "completed_at": S.nullableDateTime,
                "context": S.anyValue, "initiator": S.string, "source_system": S.string, "reason": S.string,
                "priority": S.nullableInt32, "tags": ["type": ["array", "null"], "items": S.string],
                "correlation_id": S.uuid, "parent_correlation_id": S.nullableUUID,
                "total_steps": S.int64, "pending_steps": S.int64, "in_progress_steps": S.int64,
                "completed_steps": S.int64, "failed_steps": S.int64, "ready_steps": S.int64,
                "execution_status": S.string, "recommended_action": S.string, "completion_percentage": S.double,
                "health_status": S.string, "steps": S.array(S.ref("StepReadinessStatus")),
            ], optional: ["completed_at", "priority", "tags", "parent_correlation_id"]),
        "TaskListResponse": S.object(["tasks": S.array(S.ref("TaskResponse")), "pagination": S.ref("PaginationInfo")]),
        "PaginationInfo": S.object([
            "page": S.uint32, "per_page": S.uint32, "total_count": S.uint64, "total_pages": S.uint32,
            "has_next": S.boolean, "has_previous": S.boolean,
        ]),
        "StepReadinessStatus": S.object(
            [
                "workflow_step_uuid": S.uuid, "task_uuid": S.uuid, "named_step_uuid": S.uuid, "name": S.string,
                "current_state": S.string, "dependencies_satisfied": S.boolean, "retry_eligible": S.boolean,
                "ready_for_execution": S.boolean, "last_failure_at": nullableNaiveDateTime,
                "next_retry_at": nullableNaiveDateTime, "total_parents": S.int32, "completed_parents": S.int32,
                "attempts": S.int32, "max_attempts": S.int32, "backoff_request_seconds": S.nullableInt32,
                "last_attempted_at": nullableNaiveDateTime,
            ], optional: ["last_failure_at", "next_retry_at", "backoff_request_seconds", "last_attempted_at"]),
    ]

    static let steps: [String: JSONValue] = [
        "StepResponse": S.object(
            [
                "step_uuid": S.string, "task_uuid": S.string, "name": S.string, "created_at": S.string,
                "updated_at": S.string, "completed_at": S.nullableString, "results": S.anyValue,
                "current_state": S.string, "dependencies_satisfied": S.boolean, "retry_eligible": S.boolean,
                "ready_for_execution": S.boolean, "total_parents": S.int32, "completed_parents": S.int32,
                "attempts": S.int32, "max_attempts": S.int32, "last_failure_at": S.nullableString,
                "next_retry_at": S.nullableString, "last_attempted_at": S.nullableString,
            ], optional: ["completed_at", "results", "last_failure_at", "next_retry_at", "last_attempted_at"]),
        "StepAuditResponse": S.object(
            [
                "audit_uuid": S.string, "workflow_step_uuid": S.string, "transition_uuid": S.string,
                "task_uuid": S.string, "recorded_at": S.string, "worker_uuid": S.nullableString,
                "correlation_id": S.nullableString, "success": S.boolean, "execution_time_ms": S.nullableInt64,
                "result": S.anyValue, "step_name": S.string, "from_state": S.nullableString, "to_state": S.string,
            ], optional: ["worker_uuid", "correlation_id", "execution_time_ms", "result", "from_state"]),
        "StepManualAction": [
            "description": """
            An operator's action on a step. reset_for_retry: error → pending, attempts from 0 again. \
            resolve_manually: → resolved_manually. complete_manually: → complete with completion_data.result \
            as the step's result. The task then continues (a failed task runs again once none of its steps is in error).
            """,
            "oneOf": [
                S.object(
                    [
                        "action_type": S.enumeration(["reset_for_retry"]), "reason": S.string, "reset_by": S.string,
                    ]),
                S.object(
                    [
                        "action_type": S.enumeration(["resolve_manually"]), "reason": S.string, "resolved_by": S.string,
                    ]),
                S.object([
                    "action_type": S.enumeration(["complete_manually"]), "completion_data": S.ref("ManualCompletionData"),
                    "reason": S.string, "completed_by": S.string,
                ]),
            ],
        ],
        "ManualCompletionData": S.object(["result": S.anyValue, "metadata": S.anyValue], optional: ["metadata"]),
    ]

    static let summary: [String: JSONValue] = [
        "TaskSummaryResponse": S.object([
            "task": S.ref("TaskSummaryMetadata"), "template": S.ref("TemplateSummary"),
            "steps": S.array(S.ref("StepSummaryInfo")), "dlq": S.ref("DlqSummaryInfo"), "links": S.ref("TaskSummaryLinks"),
        ]),
        "TaskSummaryMetadata": S.object(
            [
                "task_uuid": S.string, "name": S.string, "namespace": S.string, "version": S.string, "status": S.string,
                "created_at": S.dateTime, "updated_at": S.dateTime, "completed_at": S.nullableDateTime,
                "initiator": S.string, "source_system": S.string, "reason": S.string, "correlation_id": S.uuid,
                "total_steps": S.int64, "pending_steps": S.int64, "in_progress_steps": S.int64,
                "completed_steps": S.int64, "failed_steps": S.int64, "completion_percentage": S.double,
                "health_status": S.string, "execution_status": S.string, "recommended_action": S.nullableString,
            ], optional: ["completed_at", "recommended_action"]),
        "TemplateSummary": S.object(["steps": S.array(S.ref("TemplateStepSummary"))]),
        "TemplateStepSummary": S.object([
            "name": S.string, "step_type": S.string, "handler": S.string, "dependencies": S.strings,
            "retryable": S.boolean, "max_attempts": S.uint32,
        ]),
        "StepSummaryInfo": S.object(
            [
                "step_uuid": S.string, "name": S.string, "current_state": S.string,
                "created_at": S.nullableString, "completed_at": S.nullableString, "last_attempted_at": S.nullableString,
                "attempts": S.int32, "max_attempts": S.int32, "dependencies_satisfied": S.boolean,
                "retry_eligible": S.boolean, "error": S.nullable("StepErrorSummary"),
            ], optional: ["created_at", "completed_at", "last_attempted_at", "error"]),
        "StepErrorSummary": S.object(
            ["error_type": S.nullableString, "retryable": S.boolean, "status_code": S.nullableInt32],
            optional: ["error_type", "status_code"]),
        "DlqSummaryInfo": S.object(
            ["in_dlq": S.boolean, "dlq_reason": S.nullableString, "resolution_status": S.nullableString],
            optional: ["dlq_reason", "resolution_status"],
            description: "The task's pending DLQ investigation, if any (reason and status in the database's snake_case)."),
        "TaskSummaryLinks": S.object(["task": S.string, "steps": S.string, "dlq": S.string]),
    ]

    static let health: [String: JSONValue] = [
        "HealthResponse": S.object(["status": S.string, "timestamp": S.string]),
        "DetailedHealthResponse": S.object(
            [
                "status": S.string, "timestamp": S.string,
                "checks": ["type": "object", "additionalProperties": S.ref("HealthCheck")],
            ],
            description: "Ours, not upstream's shape: the database and messaging checks."),
        "HealthCheck": S.object(["status": S.string, "message": S.string]),
    ]
}
