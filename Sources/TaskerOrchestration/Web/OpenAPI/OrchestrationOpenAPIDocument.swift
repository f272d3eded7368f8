import Foundation
import TaskerHTTP
import TaskerModel

/// The OpenAPI 3.1 document of the orchestration's REST API, served at `/api-docs/openapi.json` (with
/// Swagger UI at `/api-docs/ui/`), as upstream's orchestration serves its own: every route of
/// ``OrchestrationRoutes`` but the UIs (Swagger UI's files, and the task console with its private
/// JSON, ``ConsoleRoutes``), with upstream's operation ids, tags, permissions (`x-required-permission`)
/// and schema names (``OrchestrationOpenAPISchemas``). `OrchestrationOpenAPITests` fails when a route
/// is not documented, a documented route is not served, a documented permission is not the one the
/// route asks for, or a route both servers have differs from upstream's document.
enum OrchestrationOpenAPIDocument {
    typealias S = OpenAPISchema

    /// The document as served: JSON with sorted keys (the same bytes on every run), encoded once.
    static let encoded: Data = {
        var writer = JSONWriter(sortedKeys: true, escapeSlashes: false)
        do {
            try writer.value(make())
        } catch {
            return Data(#"{"openapi":"3.1.0"}"#.utf8)
        }
        return Data(writer.text.utf8)
    }()

    /// The document.
    static func make() -> JSONValue {
        var paths = tasks.merging(steps) { a, _ in a }
        paths.merge(dlq) { a, _ in a }
        paths.merge(operatorPaths) { a, _ in a }
        var document: [String: JSONValue] = ["openapi": "3.1.0", "paths": .object(paths)]
        document["info"] = [
            "title": "Tasker Web API", "version": "1.0.0",
            "description": """
            The task API of the Swift companion orchestration (upstream's orchestration REST API: tasks, \
            workflow steps and their manual resolution, the DLQ, health). 401/403 answer a protected \
            operation without the permission it names in x-required-permission.
            """,
        ]
        document["servers"] = [["url": "/", "description": "API version 1"]]
        document["tags"] = [
            tag("tasks", "Task management operations"), tag("workflow_steps", "Workflow step operations"),
            tag("dlq", "Dead Letter Queue investigation and monitoring"), tag("health", "Health check and monitoring"),
            tag("docs", "This document"),
        ]
        document["components"] = [
            "schemas": OrchestrationOpenAPISchemas.all,
            "securitySchemes": [
                "bearer_auth": ["type": "http", "scheme": "bearer", "bearerFormat": "JWT"],
                "api_key_auth": ["type": "apiKey", "in": "header", "name": "X-API-Key"],
            ],
        ]
        return .object(document)
    }

    // MARK: - Paths

    static let tasks: [String: JSONValue] = [
        "/v1/tasks": [
            "post": operation(
                "create_task", "Create a task from a registered template and start it", tag: "tasks",
                permission: "tasks:create", body: "TaskRequest", ok: ("201", "Task created", S.ref("TaskResponse")),
                errors: [
                    "400": "Invalid request (a field named)", "404": "Template not registered",
                    "409": "A task with the same identity exists", "503": "No database connection free (Retry-After)",
                ]),
            "get": operation(
                "list_tasks", "Tasks, newest first, one page (each a summary without context and steps)", tag: "tasks",
                permission: "tasks:list",
                parameters: [
                    query("page", S.uint32, "1-based page (default 1)"),
                    query("per_page", S.uint32, "Tasks per page (default 25, at most 100)"),
                    query("namespace", S.string, "Only this namespace"), query("status", S.string, "Only this task state"),
                    query("initiator", S.string, "Only this initiator"),
                    query("source_system", S.string, "Only this source system"),
                ],
                ok: ("200", "A page of tasks", S.ref("TaskListResponse")),
                errors: ["400": "Invalid query parameter", "503": "No database connection free (Retry-After)"]),
        ],
        "/v1/tasks/{uuid}": [
            "get": operation(
                "get_task", "One task with its execution context and step readiness", tag: "tasks",
                permission: "tasks:read", parameters: [path("uuid", "Task UUID")],
                ok: ("200", "The task", S.ref("TaskResponse")), errors: ["400": "Invalid UUID", "404": "No such task"]),
            "delete": operation(
                "cancel_task", "Cancel a task and its steps no worker holds", tag: "tasks", permission: "tasks:cancel",
                parameters: [path("uuid", "Task UUID")], ok: ("200", "The cancelled task", S.ref("TaskResponse")),
                errors: [
                    "400": "Invalid UUID, or the task already finished", "404": "No such task",
                    "409": "The task kept changing state",
                ]),
        ],
        "/v1/tasks/{uuid}/summary": [
            "get": operation(
                "get_task_summary", "The task, its template's steps, its steps' states and errors, its DLQ status",
                tag: "tasks", permission: "tasks:read", parameters: [path("uuid", "Task UUID")],
                ok: ("200", "Task summary", S.ref("TaskSummaryResponse")),
                errors: ["400": "Invalid UUID", "404": "No such task"])
        ],
    ]

    static let steps: [String: JSONValue] = [
        "/v1/tasks/{uuid}/workflow_steps": [
            "get": operation(
                "list_task_steps", "The task's workflow steps with their readiness", tag: "workflow_steps",
                permission: "steps:read", parameters: [path("uuid", "Task UUID")],
                ok: ("200", "The steps", S.array(S.ref("StepResponse"))),
                errors: ["400": "Invalid UUID", "404": "No such task"])
        ],
        "/v1/tasks/{uuid}/workflow_steps/{step_uuid}": [
            "get": operation(
                "get_step", "One workflow step with its readiness", tag: "workflow_steps", permission: "steps:read",
                parameters: stepPath, ok: ("200", "The step", S.ref("StepResponse")),
                errors: ["400": "Invalid UUID", "404": "The task has no such step"]),
            "patch": operation(
                "resolve_step_manually",
                "Act on a step: reset it for retry, resolve it manually, or complete it with a result; the task continues",
                tag: "workflow_steps", permission: "steps:resolve", parameters: stepPath, body: "StepManualAction",
                ok: ("200", "The step afterwards", S.ref("StepResponse")),
                errors: [
                    "400": "Invalid body or UUID, an unknown action_type, a finished task, or a step state the action does not apply to",
                    "404": "The task has no such step",
                    "409": "A worker or the orchestration moved the step first (nothing was written)",
                    "503": "No database connection free (Retry-After)",
                ]),
        ],
        "/v1/tasks/{uuid}/workflow_steps/{step_uuid}/audit": [
            "get": operation(
                "get_step_audit", "The step's result audit history, newest first", tag: "workflow_steps",
                permission: "steps:read", parameters: stepPath,
                ok: ("200", "Audit records", S.array(S.ref("StepAuditResponse"))),
                errors: ["400": "Invalid UUID", "404": "The task has no such step"])
        ],
    ]

    static let dlq: [String: JSONValue] = [
        "/v1/dlq": [
            "get": operation(
                "list_dlq_entries", "DLQ entries, newest first", tag: "dlq", permission: "dlq:read",
                parameters: [
                    query("resolution_status", S.ref("DlqResolutionStatus"), "Only entries in this status"),
                    query("limit", S.uint32, "At most this many (default 50, capped at 100)"),
                    query("offset", S.uint32, "Skip this many (default 0)"),
                ],
                ok: ("200", "DLQ entries", S.array(S.ref("DlqEntry"))), errors: ["400": "Invalid query parameter"])
        ],
        "/v1/dlq/task/{task_uuid}": [
            "get": operation(
                "get_dlq_entry", "The task's newest DLQ entry with its snapshot", tag: "dlq", permission: "dlq:read",
                parameters: [path("task_uuid", "Task UUID")], ok: ("200", "The DLQ entry", S.ref("DlqEntry")),
                errors: ["400": "Invalid UUID", "404": "The task has no DLQ entry"])
        ],
        "/v1/dlq/entry/{dlq_entry_uuid}": [
            "patch": operation(
                "update_dlq_investigation", "Update an investigation: status, notes, resolver, metadata", tag: "dlq",
                permission: "dlq:update", parameters: [path("dlq_entry_uuid", "DLQ entry UUID")],
                body: "UpdateInvestigationRequest",
                ok: ("200", "Investigation updated", S.ref("UpdateInvestigationResponse")),
                errors: [
                    "400": "Invalid body or UUID", "404": "No such DLQ entry",
                    "409": "The task already has a pending investigation",
                ])
        ],
        "/v1/dlq/stats": [
            "get": operation(
                "get_dlq_stats", "DLQ statistics by reason", tag: "dlq", permission: "dlq:stats",
                ok: ("200", "Statistics", S.array(S.ref("DlqStats"))))
        ],
        "/v1/dlq/investigation-queue": [
            "get": operation(
                "get_investigation_queue", "Pending investigations, highest priority first", tag: "dlq",
                permission: "dlq:read", parameters: [query("limit", S.uint32, "At most this many (default 100, capped at 100)")],
                ok: ("200", "The investigation queue", S.array(S.ref("DlqInvestigationQueueEntry"))),
                errors: ["400": "Invalid query parameter"])
        ],
        "/v1/dlq/staleness": [
            "get": operation(
                "get_staleness_monitoring", "Waiting and running tasks by staleness (stale, then warning, then healthy)",
                tag: "dlq", permission: "dlq:read",
                parameters: [query("limit", S.uint32, "At most this many (default 100, capped at 100)")],
                ok: ("200", "Staleness of each task", S.array(S.ref("StalenessMonitoring"))),
                errors: ["400": "Invalid query parameter"])
        ],
    ]

    static let operatorPaths: [String: JSONValue] = [
        "/health": [
            "get": operation(
                "basic_health", "Whether the database answers", tag: "health",
                ok: ("200", "Healthy", S.ref("HealthResponse")), errors: ["503": "Unhealthy (same body)"])
        ],
        "/health/live": [
            "get": operation(
                "liveness_probe", "Liveness (always 200 while the process answers)", tag: "health",
                ok: ("200", "Alive", S.ref("HealthResponse")))
        ],
        "/health/ready": [
            "get": operation(
                "readiness_probe", "Readiness: the database and the messaging (broker connection, queue database)",
                tag: "health", ok: ("200", "Ready", S.ref("HealthResponse")), errors: ["503": "Not ready (same body)"])
        ],
        "/health/detailed": [
            "get": operation(
                "detailed_health", "Each check (always 200)", tag: "health",
                ok: ("200", "The checks", S.ref("DetailedHealthResponse")))
        ],
        "/metrics": [
            "get": operation(
                "prometheus_metrics", "Prometheus text exposition format 0.0.4", tag: "health",
                ok: ("200", "Metrics", S.string), contentType: "text/plain; version=0.0.4")
        ],
        "/api-docs/openapi.json": [
            "get": operation(
                "openapi_document", "This document (Swagger UI at /api-docs/ui/)", tag: "docs",
                ok: ("200", "OpenAPI 3.1 document", ["type": "object"]))
        ],
    ]

    // MARK: - Helpers

    private static let stepPath = [path("uuid", "Task UUID"), path("step_uuid", "Step UUID")]

    private static func path(_ name: String, _ description: String) -> JSONValue {
        [
            "name": .string(name), "in": "path", "required": true, "description": .string(description),
            "schema": S.uuid,
        ]
    }

    private static func query(_ name: String, _ schema: JSONValue, _ description: String) -> JSONValue {
        ["name": .string(name), "in": "query", "required": false, "description": .string(description), "schema": schema]
    }

    private static func tag(_ name: String, _ description: String) -> JSONValue {
        ["name": .string(name), "description": .string(description)]
    }

    private static func apiError(_ description: String) -> JSONValue {
        ["description": .string(description), "content": ["application/json": ["schema": S.ref("ApiError")]]]
    }

    /// One operation: `ok` is its success (status, description, schema); every operation may also answer
    /// an `ApiError` (`default`: 404 for an unknown path, 408 when it times out, 500 on an unexpected
    /// failure); protected ones 401 and 403, and name their permission in `x-required-permission`.
    private static func operation(
        _ id: String, _ summary: String, tag: String, permission: String? = nil, parameters: [JSONValue] = [],
        body: String? = nil, ok: (status: String, description: String, schema: JSONValue),
        contentType: String = "application/json", errors: [String: String] = [:]
    ) -> JSONValue {
        var responses = errors.mapValues(apiError)
        responses[ok.status] = [
            "description": .string(ok.description), "content": [contentType: ["schema": ok.schema]],
        ]
        responses["default"] = apiError("Error (`{\"error\":{\"code\",\"message\"}}`)")
        var members: [String: JSONValue] = ["operationId": .string(id), "summary": .string(summary), "tags": [.string(tag)]]
        if !parameters.isEmpty { members["parameters"] = .array(parameters) }
        if let body {
            members["requestBody"] = [
                "required": true, "content": ["application/json": ["schema": S.ref(body)]],
            ]
        }
        if let permission {
            responses["401"] = apiError("Authentication required")
            responses["403"] = apiError("Missing permission \(permission)")
            members["security"] = [["bearer_auth": []], ["api_key_auth": []]]
            members["x-required-permission"] = .string(permission)
        }
        members["responses"] = .object(responses)
        return .object(members)
    }
}
