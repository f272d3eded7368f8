import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TaskerAuth
import TaskerHTTP
import TaskerModel

/// The routes of the orchestration's REST API (upstream's paths, methods, status codes, JSON shapes and
/// permissions; each is in ``OrchestrationOpenAPIDocument``, served at `/api-docs/openapi.json`):
///
/// | Route | Permission | Answer |
/// |---|---|---|
/// | `POST /v1/tasks` | `tasks:create` | 201 `TaskResponse`; 404 unknown template; 409 duplicate identity |
/// | `GET /v1/tasks?page&per_page&namespace&status&initiator&source_system` | `tasks:list` | `TaskListResponse` |
/// | `GET /v1/tasks/{uuid}` | `tasks:read` | `TaskResponse` |
/// | `DELETE /v1/tasks/{uuid}` | `tasks:cancel` | `TaskResponse`; 400 when already finished |
/// | `GET /v1/tasks/{uuid}/summary` | `tasks:read` | `TaskSummaryResponse` |
/// | `GET /v1/tasks/{uuid}/workflow_steps` | `steps:read` | `[StepResponse]` |
/// | `GET /v1/tasks/{uuid}/workflow_steps/{step_uuid}` | `steps:read` | `StepResponse` |
/// | `PATCH /v1/tasks/{uuid}/workflow_steps/{step_uuid}` | `steps:resolve` | `StepResponse` after a `StepManualAction`; 400 when it does not apply, 409 when the step moved first |
/// | `GET /v1/tasks/{uuid}/workflow_steps/{step_uuid}/audit` | `steps:read` | `[StepAuditResponse]` |
/// | `GET /v1/dlq?resolution_status&limit&offset` | `dlq:read` | `[DlqEntry]` |
/// | `GET /v1/dlq/task/{task_uuid}` | `dlq:read` | `DlqEntry` |
/// | `PATCH /v1/dlq/entry/{dlq_entry_uuid}` | `dlq:update` | `UpdateInvestigationResponse` |
/// | `GET /v1/dlq/stats` | `dlq:stats` | `[DlqStats]` |
/// | `GET /v1/dlq/investigation-queue?limit` | `dlq:read` | `[DlqInvestigationQueueEntry]` |
/// | `GET /v1/dlq/staleness?limit` | `dlq:read` | `[StalenessMonitoring]` |
/// | `GET /health`, `/health/live` | – | `{"status","timestamp"}` |
/// | `GET /health/ready`, `/health/detailed` | – | see ``OrchestrationOperatorRoutes`` (database and broker) |
/// | `GET /metrics` | – | Prometheus text (``OrchestrationOperatorRoutes``) |
/// | `GET /api-docs/openapi.json`, `/api-docs/ui/…` | – | the OpenAPI document, Swagger UI (`SwaggerUIRoutes`) |
/// | `GET /console…` | see ``ConsoleRoutes`` | the task console |
///
/// Every refusal is upstream's `{"error":{"code","message"}}`: 400 `INVALID_UUID` / `BAD_REQUEST`
/// (a field naming what was wrong: `TaskRequest.validate()`, ``StepManualAction``,
/// ``DLQInvestigationUpdate``; a body that cannot be read to its end), 401/403 from auth, 403
/// `FORBIDDEN` for a cross-site browser request and 415 `UNSUPPORTED_MEDIA_TYPE` for a body that is not
/// JSON (`CrossSiteRequestGuard`, on every method but GET/HEAD/OPTIONS), 404 `NOT_FOUND`, 408 `TIMEOUT`,
/// 409 `CONFLICT`, 413 for a body over 4 MiB, 503 `SERVICE_UNAVAILABLE` with `Retry-After` when no
/// database connection is free within ``TaskQueries/connectionWait``. Lists carry summaries; one
/// document's large fields are bounded (``TaskQueries/documentFieldLimit``).
enum OrchestrationRoutes {
    typealias Context = BasicRequestContext
    /// A group of routes that require one permission (by its name in upstream's vocabulary).
    typealias Guarded = (_ permission: String) -> RouterGroup<Context>

    static func makeRouter(queries: TaskQueries, authenticator: WorkerAuthenticator, requestTimeout: Duration) -> Router<Context> {
        let router = Router(context: Context.self)
        // A server span per request (issue #30), continuing a caller's `traceparent`.
        router.add(middleware: TracingMiddleware())
        router.add(middleware: APIErrorMiddleware())
        router.add(middleware: CrossSiteRequestMiddleware())
        router.add(middleware: RequestTimeoutMiddleware(timeout: requestTimeout))
        let guarded: Guarded = { permission in
            router.group().add(middleware: RequirePermissionMiddleware(authenticator: authenticator, permissionNamed: permission))
        }
        addTaskRoutes(guarded, queries)
        addStepRoutes(guarded, queries)
        addDLQRoutes(guarded, queries)
        router.get("health") { _, _ in await health(queries) }
        router.get("health/ready") { _, _ in await OrchestrationOperatorRoutes.readiness(queries) }
        router.get("health/detailed") { _, _ in await OrchestrationOperatorRoutes.detailed(queries) }
        router.get("metrics") { _, _ in OrchestrationOperatorRoutes.metrics(queries.orchestration) }
        router.get("health/live") { _, _ in json(Data(#"{"status":"alive","timestamp":"\#(now())"}"#.utf8)) }
        addDocumentation(to: router)
        ConsoleRoutes.add(to: router, queries: queries, authenticator: authenticator)
        return router
    }

    /// The request's body, at most ``OrchestrationWebServer/maxBodyBytes`` (else 413). A body the
    /// HTTP layer cannot read to its end (a malformed chunked encoding, a connection cut short) is a
    /// 400 naming why, not an internal error.
    static func collectBody(_ request: Request) async throws -> Data {
        var request = request
        do {
            let body = try await request.collectBody(upTo: OrchestrationWebServer.maxBodyBytes)
            return Data(body.readableBytesView)
        } catch let error as NIOTooManyBytesError {
            throw error
        } catch let error as CancellationError {
            throw error
        } catch {
            throw TaskAPIError(
                .badRequest, "Malformed request body: it could not be read to its end (\(String(String(describing: error).prefix(200))))")
        }
    }

    static func uuid(_ context: Context, _ name: String, what: String) throws(TaskAPIError) -> UUID {
        try TaskAPIError.parseUUID(context.parameters.get(name) ?? "", what: what)
    }

    static func notFound(step: UUID, task: UUID) -> String {
        "task \(task.uuidString.lowercased()) has no workflow step \(step.uuidString.lowercased())"
    }

    static func found(_ document: Data?, _ message: String) throws(TaskAPIError) -> Response {
        guard let document else { throw TaskAPIError(.notFound, message) }
        return json(document)
    }

    static func json(_ document: Data, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: document)))
    }

    static func health(_ queries: TaskQueries) async -> Response {
        let healthy = await queries.databaseAnswers()
        return json(
            Data(#"{"status":"\#(healthy ? "healthy" : "unhealthy")","timestamp":"\#(now())"}"#.utf8),
            status: healthy ? .ok : .serviceUnavailable)
    }

    static func now() -> String { ResultTimestamp.string(Date()) }
}
