import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TaskerAuth

/// The task console: a page served by the orchestration's web server, its files compiled into the
/// binary (``ConsolePage``, ``ConsoleScript``). The page is public, like upstream's Swagger UI; its data
/// comes from the task API (`/v1/tasks…`, `/v1/dlq…`; its actions are upstream's `PATCH` routes of a
/// step and of a DLQ entry) and four console-only JSON routes, each under the API's permissions (the
/// page sends the API key or bearer token the user gives it):
///
/// | Route | Permission | Answer |
/// |---|---|---|
/// | `GET /console` | – | the page (`text/html`) |
/// | `GET /console/console.js`, `/console/console.css` | – | its script and style sheet |
/// | `GET /console/api/auth` | – | `{"enabled","api_key_header"}`: whether the page must ask for credentials |
/// | `GET /console/api/summary` | `tasks:list` | ``TaskQueries/consoleSummary()`` |
/// | `GET /console/api/tasks/{uuid}/dag` | `steps:read` | ``TaskQueries/consoleDAG(_:)`` |
/// | `GET /console/api/workers` | `system:analytics_read` | ``TaskQueries/consoleWorkers()`` |
/// | `GET /console/api/throughput` | `system:analytics_read` | ``TaskQueries/consoleThroughput()`` |
///
/// Live updates: the page polls these routes every second while a task is open or tasks are running
/// (the overview, the workers and the DLQ every third second, the chart every tenth).
/// Every answer of the page's own files carries a Content-Security-Policy allowing scripts, styles and
/// requests from the orchestration only (no inline script), so nothing is fetched from elsewhere.
enum ConsoleRoutes {
    /// The page's Content-Security-Policy.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    static func add(
        to router: Router<OrchestrationRoutes.Context>, queries: TaskQueries, authenticator: WorkerAuthenticator
    ) {
        router.get("console") { _, _ in file(ConsolePage.html, type: "text/html; charset=utf-8") }
        router.get("console/console.js") { _, _ in file(ConsoleScript.source, type: "text/javascript; charset=utf-8") }
        router.get("console/console.css") { _, _ in file(ConsolePage.css, type: "text/css; charset=utf-8") }
        router.get("console/api/auth") { _, _ in
            let header =
                (try? JSONEncoder().encode(authenticator.apiKeyHeader)).flatMap { String(data: $0, encoding: .utf8) }
                ?? "\"X-API-Key\""
            return OrchestrationRoutes.json(Data("{\"enabled\":\(authenticator.isEnabled),\"api_key_header\":\(header)}".utf8))
        }
        func guarded(_ permission: String) -> RouterGroup<OrchestrationRoutes.Context> {
            router.group().add(middleware: RequirePermissionMiddleware(authenticator: authenticator, permissionNamed: permission))
        }
        guarded("tasks:list").get("console/api/summary") { _, _ in
            OrchestrationRoutes.json(try await queries.consoleSummary())
        }
        guarded("steps:read").get("console/api/tasks/{uuid}/dag") { _, context in
            let task = try OrchestrationRoutes.uuid(context, "uuid", what: "task uuid")
            return try OrchestrationRoutes.found(await queries.consoleDAG(task), "task \(task.lowercased) does not exist")
        }
        guarded("system:analytics_read").get("console/api/workers") { _, _ in
            OrchestrationRoutes.json(try await queries.consoleWorkers())
        }
        guarded("system:analytics_read").get("console/api/throughput") { _, _ in
            OrchestrationRoutes.json(try await queries.consoleThroughput())
        }
    }

    /// One of the page's files, with the console's security headers.
    static func file(_ text: String, type: String) -> Response {
        var headers: HTTPFields = [.contentType: type, .cacheControl: "no-cache"]
        headers[.contentSecurityPolicy] = contentSecurityPolicy
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
