import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TaskerAuth
import TaskerHTTP
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The routes of the orchestration's REST API (upstream's paths, methods, status codes and permissions):
///
/// | Route | Permission | Answer |
/// |---|---|---|
/// | `POST /v1/tasks` | `tasks:create` | 201 `TaskResponse`; 404 unknown template; 409 duplicate identity |
/// | `GET /v1/tasks?page&per_page&namespace&status&initiator&source_system` | `tasks:list` | `TaskListResponse` |
/// | `GET /v1/tasks/{uuid}` | `tasks:read` | `TaskResponse` |
/// | `DELETE /v1/tasks/{uuid}` | `tasks:cancel` | `TaskResponse`; 400 when already finished |
/// | `GET /v1/tasks/{uuid}/workflow_steps` | `steps:read` | `[StepResponse]` |
/// | `GET /v1/tasks/{uuid}/workflow_steps/{step_uuid}` | `steps:read` | `StepResponse` |
/// | `GET /v1/tasks/{uuid}/workflow_steps/{step_uuid}/audit` | `steps:read` | `[StepAuditResponse]` |
/// | `GET /v1/dlq?resolution_status&limit&offset` | `dlq:read` | `[DlqEntry]` |
/// | `GET /v1/dlq/task/{task_uuid}` | `dlq:read` | `DlqEntry` |
/// | `GET /health`, `/health/live` | – | `{"status","timestamp"}` |
/// | `GET /health/ready`, `/health/detailed` | – | see ``OrchestrationOperatorRoutes`` (database and broker) |
/// | `GET /metrics` | – | Prometheus text (``OrchestrationOperatorRoutes``) |
/// | `GET /console…` | see ``ConsoleRoutes`` | the task console |
///
/// Every refusal is upstream's `{"error":{"code","message"}}`: 400 `INVALID_UUID` / `BAD_REQUEST`
/// (a field naming what was wrong: `TaskRequest.validate()`; a body that cannot be read to its end),
/// 401/403 from auth, 403 `FORBIDDEN` for a cross-site browser request and 415
/// `UNSUPPORTED_MEDIA_TYPE` for a body that is not JSON (`CrossSiteRequestGuard`, on every method but
/// GET/HEAD/OPTIONS), 404 `NOT_FOUND`, 408 `TIMEOUT`, 409 `CONFLICT`, 413 for a body over 4 MiB, 503
/// `SERVICE_UNAVAILABLE` with `Retry-After` when no database connection is free within
/// ``TaskQueries/connectionWait``. Lists carry summaries; one document's large fields are bounded
/// (``TaskQueries/documentFieldLimit``).
enum OrchestrationRoutes {
    typealias Context = BasicRequestContext

    static func makeRouter(queries: TaskQueries, authenticator: WorkerAuthenticator, requestTimeout: Duration) -> Router<Context> {
        let router = Router(context: Context.self)
        // A server span per request (issue #30), continuing a caller's `traceparent`.
        router.add(middleware: TracingMiddleware())
        router.add(middleware: APIErrorMiddleware())
        router.add(middleware: CrossSiteRequestMiddleware())
        router.add(middleware: RequestTimeoutMiddleware(timeout: requestTimeout))
        func guarded(_ permission: String) -> RouterGroup<Context> {
            router.group().add(middleware: RequirePermissionMiddleware(authenticator: authenticator, permissionNamed: permission))
        }
        guarded("tasks:create").post("v1/tasks") { request, _ in
            let taskRequest = try decodeTaskRequest(try await collectBody(request))
            return json(try await queries.create(taskRequest), status: .created)
        }
        guarded("tasks:list").get("v1/tasks") { request, _ in
            let query = request.uri.queryParameters.map { (String($0.key), String($0.value)) }
            return json(try await queries.list(try TaskListFilter(query: query)))
        }
        guarded("tasks:read").get("v1/tasks/{uuid}") { _, context in
            let task = try uuid(context, "uuid", what: "task uuid")
            return try found(await queries.task(task), "task \(task.uuidString.lowercased()) does not exist")
        }
        guarded("tasks:cancel").delete("v1/tasks/{uuid}") { _, context in
            json(try await queries.cancel(try uuid(context, "uuid", what: "task uuid")))
        }
        guarded("steps:read").get("v1/tasks/{uuid}/workflow_steps") { _, context in
            let task = try uuid(context, "uuid", what: "task uuid")
            return try found(await queries.steps(task), "task \(task.uuidString.lowercased()) does not exist")
        }
        guarded("steps:read").get("v1/tasks/{uuid}/workflow_steps/{step_uuid}") { _, context in
            let task = try uuid(context, "uuid", what: "task uuid")
            let step = try uuid(context, "step_uuid", what: "step uuid")
            return try found(await queries.step(task, step), notFound(step: step, task: task))
        }
        guarded("steps:read").get("v1/tasks/{uuid}/workflow_steps/{step_uuid}/audit") { _, context in
            let task = try uuid(context, "uuid", what: "task uuid")
            let step = try uuid(context, "step_uuid", what: "step uuid")
            return try found(await queries.audit(task, step), notFound(step: step, task: task))
        }
        guarded("dlq:read").get("v1/dlq") { request, _ in
            let parameters = request.uri.queryParameters
            var status: String?
            if let value = parameters.get("resolution_status").map({ String($0) }) {
                guard dlqResolutionStatuses.contains(value) else {
                    throw TaskAPIError(
                        .badRequest,
                        "resolution_status must be one of \(dlqResolutionStatuses.joined(separator: ", ")), got \(String(value.prefix(64)).debugDescription)"
                    )
                }
                status = value
            }
            let limit =
                try parameters.get("limit").map { String($0) }.map { v throws(TaskAPIError) in
                    try TaskListFilter.integer(v, name: "limit", in: 1...maxDLQLimit)
                } ?? 50
            let offset =
                try parameters.get("offset").map { String($0) }.map { v throws(TaskAPIError) in
                    try TaskListFilter.integer(v, name: "offset", in: 0...1_000_000)
                } ?? 0
            return json(try await queries.dlqEntries(resolutionStatus: status, limit: limit, offset: offset))
        }
        guarded("dlq:read").get("v1/dlq/task/{task_uuid}") { _, context in
            let task = try uuid(context, "task_uuid", what: "task uuid")
            return try found(await queries.dlqEntry(task: task), "task \(task.uuidString.lowercased()) has no DLQ entry")
        }
        router.get("health") { _, _ in await health(queries) }
        router.get("health/ready") { _, _ in await OrchestrationOperatorRoutes.readiness(queries) }
        router.get("health/detailed") { _, _ in await OrchestrationOperatorRoutes.detailed(queries) }
        router.get("metrics") { _, _ in OrchestrationOperatorRoutes.metrics(queries.orchestration) }
        router.get("health/live") { _, _ in json(Data(#"{"status":"alive","timestamp":"\#(now())"}"#.utf8)) }
        ConsoleRoutes.add(to: router, queries: queries, authenticator: authenticator)
        return router
    }

    /// `tasker.dlq_resolution_status` values.
    static let dlqResolutionStatuses = ["pending", "manually_resolved", "permanently_failed", "cancelled"]
    /// The most DLQ entries one answer holds (a larger `limit` is capped).
    static let maxDLQLimit = 100

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

    static func decodeTaskRequest(_ body: Data) throws(TaskAPIError) -> TaskRequest {
        do {
            return try UntrustedJSON.decode(
                TaskRequest.self, from: body, limit: UntrustedJSON.maximumValueDepth, what: "the task request body")
        } catch let error as JSONNestingError {
            throw TaskAPIError(.badRequest, "Invalid JSON body: \(error)")
        } catch DecodingError.keyNotFound(let key, _) {
            throw TaskAPIError(.badRequest, "Invalid JSON body: missing field \(key.stringValue.debugDescription)")
        } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context) {
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw TaskAPIError(.badRequest, "Invalid JSON body: field \(path.debugDescription) has the wrong type")
        } catch DecodingError.dataCorrupted(let context) where !context.codingPath.isEmpty {
            // A number out of range (`priority` 2^70), a uuid that is not one.
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw TaskAPIError(
                .badRequest,
                "Invalid JSON body: field \(path.debugDescription) has an invalid value (\(String(context.debugDescription.prefix(200))))")
        } catch {
            // Foundation refuses an integer beyond 64 bits without naming where it was (no coding
            // path): `priority` is the request's only integer field.
            if case .object(let fields)? = try? UntrustedJSON.decode(
                JSONValue.self, from: body, limit: UntrustedJSON.maximumValueDepth, what: "the task request body"),
                case .double? = fields["priority"]
            {
                throw TaskAPIError(.badRequest, "Invalid JSON body: field \"priority\" is not an integer in -100...100")
            }
            throw TaskAPIError(.badRequest, "Invalid JSON body: not a JSON object of a task request")
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

/// Answers thrown errors in upstream's `ApiError` shape (`APIErrorResponse`, the worker's builder).
struct APIErrorMiddleware<Context: RequestContext>: RouterMiddleware {

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as TaskAPIError {
            var response = APIErrorResponse.make(error.code, message: error.message)
            if let seconds = error.retryAfterSeconds { response.headers[.retryAfter] = String(seconds) }
            return response
        } catch let error as any HTTPResponseError {
            // `HTTPError`s of the routes, and Hummingbird's own (`collectBody(upTo:)` throws
            // `NIOTooManyBytesError`, a 413).
            switch APIErrorCode.forStatus(error.status.code) {
            case .notFound:
                return APIErrorResponse.make(.notFound, message: "No route for \(request.method.rawValue) \(request.uri.path)")
            case .payloadTooLarge:
                return APIErrorResponse.make(
                    .payloadTooLarge, message: "Request body larger than \(OrchestrationWebServer.maxBodyBytes) bytes")
            case let code:
                return APIErrorResponse.make(
                    code, message: (error as? HTTPError)?.body ?? error.status.reasonPhrase, status: error.status)
            }
        } catch {
            return APIErrorResponse.make(.internalError, message: "Internal server error")
        }
    }
}
