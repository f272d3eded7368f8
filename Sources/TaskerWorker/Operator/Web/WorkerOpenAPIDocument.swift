import TaskerAuth
import TaskerHandlerSDK
import TaskerModel

/// The OpenAPI 3.1 document of this server's API, served at `/api-docs/openapi.json`. Paths,
/// methods and bodies follow what the routes really return (tests check every route against it);
/// `/config` and the metrics paths appear only when the server mounts them.
enum WorkerOpenAPIDocument {
    /// The document for a server with the given optional routes.
    package static func make(configEndpoint: Bool, metricsEndpoints: Bool) -> JSONValue {
        var paths: [String: JSONValue] = [
            "/health": [
                "get": operation(
                    "Basic health check (always 200 while the process answers)", tag: "health",
                    ok: json("BasicHealthResponse"))
            ],
            "/health/live": ["get": operation("Liveness probe (always 200)", tag: "health", ok: json("BasicHealthResponse"))],
            "/health/ready": [
                "get": operation(
                    "Readiness probe: database, command processor and event intake, own queue depth", tag: "health",
                    ok: json("ReadinessResponse"),
                    errors: ["503": response("Not ready", schema: "ErrorResponse")])
            ],
            "/health/detailed": [
                "get": operation(
                    "Detailed health (always 200: healthy or degraded)", tag: "health",
                    ok: json("DetailedHealthResponse"))
            ],
            "/v1/templates": [
                "get": operation(
                    "Supported namespaces and templates", tag: "templates", ok: json("TemplateListResponse"),
                    permission: .templatesRead,
                    parameters: [
                        query("namespace", "string", "Accepted and ignored (as upstream)"),
                        query("include_cache_stats", "boolean", "Include template cache figures"),
                    ],
                    errors: ["400": response("Invalid query parameter", schema: "ApiError")])
            ],
            "/v1/templates/{namespace}/{name}/{version}": [
                "get": operation(
                    "One template with its registration metadata", tag: "templates", ok: json("TemplateResponse"),
                    permission: .templatesRead, parameters: templatePath,
                    errors: [
                        "404": response("template_not_found or handler_metadata_not_found", schema: "ErrorResponse"),
                        "500": response("internal_error", schema: "ErrorResponse"),
                    ])
            ],
            "/v1/templates/{namespace}/{name}/{version}/validate": [
                "post": operation(
                    "Whether this worker can run the template (no request body)", tag: "templates",
                    ok: json("TemplateValidationResponse"), permission: .templatesValidate, parameters: templatePath,
                    errors: [
                        "404": response("template_not_found", schema: "ErrorResponse"),
                        "500": response("internal_error", schema: "ErrorResponse"),
                    ])
            ],
            "/api-docs/openapi.json": [
                "get": operation(
                    "This document", tag: "docs",
                    ok: [
                        "description": "OpenAPI 3.1 document",
                        "content": [
                            "application/json": ["schema": ["type": "object"]]
                        ],
                    ])
            ],
        ]
        if configEndpoint {
            paths["/config"] = [
                "get": operation(
                    "The worker's configuration without secrets", tag: "config", ok: json("WorkerConfigResponse"),
                    permission: .configRead, errors: ["500": response("Internal server error", schema: "ApiError")])
            ]
        }
        if metricsEndpoints {
            paths["/metrics"] = [
                "get": operation(
                    "Prometheus text exposition format 0.0.4", tag: "metrics",
                    ok: ["description": "Metrics", "content": ["text/plain; version=0.0.4": ["schema": ["type": "string"]]]])
            ]
            paths["/metrics/worker"] = ["get": operation("Worker metrics as JSON", tag: "metrics", ok: json("WorkerMetricsResponse"))]
            paths["/metrics/events"] = ["get": operation("Domain event statistics", tag: "metrics", ok: json("DomainEventStats"))]
        }
        return [
            "openapi": "3.1.0",
            "info": [
                "title": "Tasker Worker API", "version": "1.0.0",
                "description": .string("REST API of the Swift Tasker worker (tasker-worker-swift \(TaskerWorkerVersion.current))."),
            ],
            "servers": [["url": "/"]],
            "paths": .object(paths),
            "components": [
                "schemas": WorkerOpenAPISchemas.all,
                "securitySchemes": [
                    "bearer_auth": ["type": "http", "scheme": "bearer", "bearerFormat": "JWT"],
                    "api_key_auth": ["type": "apiKey", "in": "header", "name": "X-API-Key"],
                ],
            ],
        ]
    }

    // MARK: - Helpers

    private static let templatePath: [JSONValue] = ["namespace", "name", "version"].map { name in
        ["name": .string(name), "in": "path", "required": true, "schema": ["type": "string"]]
    }

    private static func query(_ name: String, _ type: String, _ description: String) -> JSONValue {
        [
            "name": .string(name), "in": "query", "required": false, "description": .string(description),
            "schema": ["type": .string(type)],
        ]
    }

    private static func json(_ schema: String) -> JSONValue {
        response("Success", schema: schema)
    }

    private static func response(_ description: String, schema: String) -> JSONValue {
        [
            "description": .string(description),
            "content": ["application/json": ["schema": WorkerOpenAPISchemas.ref(schema)]],
        ]
    }

    /// One operation. Every operation may also answer with an `ApiError` (`default`): 404 for an
    /// unknown path, 408 when it times out, 500 on an unexpected failure; protected ones 401/403.
    private static func operation(
        _ summary: String, tag: String, ok: JSONValue, permission: WorkerPermission? = nil,
        parameters: [JSONValue] = [], errors: [String: JSONValue] = [:]
    ) -> JSONValue {
        var responses = errors
        responses["200"] = ok
        responses["default"] = response("Error (`{\"error\":{\"code\",\"message\"}}`)", schema: "ApiError")
        var members: [String: JSONValue] = [
            "summary": .string(summary), "tags": [.string(tag)], "responses": .object(responses),
        ]
        if !parameters.isEmpty { members["parameters"] = .array(parameters) }
        if let permission {
            responses["401"] = response("Authentication failed", schema: "ApiError")
            responses["403"] = response("Missing permission", schema: "ApiError")
            members["responses"] = .object(responses)
            members["security"] = [["bearer_auth": []], ["api_key_auth": []]]
            members["x-required-permission"] = .string(permission.rawValue)
        }
        return .object(members)
    }
}
