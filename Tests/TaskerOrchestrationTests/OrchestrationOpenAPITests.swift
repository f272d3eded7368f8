import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import TaskerHTTP
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerPostgres

/// The orchestration's OpenAPI document (`OrchestrationOpenAPIDocument`, `/api-docs/openapi.json`) against
/// the routes the router really serves, the permissions they really ask for, and upstream's own document
/// (`Tests/Fixtures/upstream/orchestration-openapi.json`, see its PROVENANCE), without a database: the
/// router's pool points at a closed port and none of these requests reaches it.
@Suite(.timeLimit(.minutes(3))) struct OrchestrationOpenAPITests {
    /// Upstream's generated document.
    static let upstreamFile = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/upstream/orchestration-openapi.json")

    /// The routes that are user interfaces, not API: Swagger UI's files, and the task console (its page,
    /// files and the private JSON only its page reads, documented in `ConsoleRoutes`).
    static func isUserInterface(_ path: String) -> Bool {
        path.hasPrefix(SwaggerUIRoutes.path) || path == "/console" || path.hasPrefix("/console/")
    }

    /// An API key with none of the task API's permissions (a worker permission only).
    static let outsiderKey = "outsider-key-0123456789"

    /// Runs `body` with the routes the router serves (`METHOD /path`) and a client of the router (auth on:
    /// `outsiderKey` is its only key).
    static func withRouter(_ body: @escaping @Sendable ([String], any TestClientProtocol) async throws -> Void) async throws {
        var auth = WorkerConfiguration.Auth()
        auth.enabled = true
        auth.apiKeysEnabled = true
        auth.apiKeys = [WorkerConfiguration.APIKey(key: outsiderKey, permissions: ["worker:config_read"])]
        try await OrchestrationTaskAPIRoutesTests.withRouter(auth: auth, body)
    }

    /// `METHOD path` of every operation of `document`.
    static func operations(_ document: JSONValue) -> Set<String> {
        Set(members(document["paths"]).flatMap { path, item in members(item).keys.map { "\($0.uppercased()) \(path)" } })
    }

    /// The operation `METHOD path` of `document`.
    static func operation(_ document: JSONValue, _ route: String) -> JSONValue? {
        let parts = route.split(separator: " ", maxSplits: 1).map(String.init)
        return document["paths"]?[parts[1]]?[parts[0].lowercased()]
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedRouteIsServed() async throws {
        try await Self.withRouter { routes, _ in
            let served = Set(routes.filter { !Self.isUserInterface(String($0.split(separator: " ")[1])) })
            let documented = Self.operations(OrchestrationOpenAPIDocument.make())
            #expect(served.subtracting(documented).isEmpty, "served but not documented: \(served.subtracting(documented).sorted())")
            #expect(documented.subtracting(served).isEmpty, "documented but not served: \(documented.subtracting(served).sorted())")
            for route in [
                "POST /v1/tasks", "GET /v1/tasks/{uuid}/summary", "PATCH /v1/tasks/{uuid}/workflow_steps/{step_uuid}",
                "PATCH /v1/dlq/entry/{dlq_entry_uuid}", "GET /v1/dlq/stats", "GET /v1/dlq/investigation-queue",
                "GET /v1/dlq/staleness", "GET /api-docs/openapi.json", "GET /health",
            ] {
                #expect(served.contains(route), "the router does not serve \(route)")
            }
            // The UI routes left out are really there (else the filter above would hide nothing).
            #expect(routes.contains("GET " + SwaggerUIRoutes.path + "/{file}"))
        }
    }

    /// Each protected operation answers 401 without credentials and 403 naming exactly the permission
    /// the document gives (`x-required-permission`) to a key without it; the open ones are the probes,
    /// the metrics and the document.
    @Test func documentedPermissionsAreTheOnesTheRoutesAskFor() async throws {
        try await Self.withRouter { _, client in
            let document = OrchestrationOpenAPIDocument.make()
            var open: [String] = []
            for route in Self.operations(document).sorted() {
                guard let permission = Self.operation(document, route)?["x-required-permission"]?.stringValue else {
                    open.append(route)
                    continue
                }
                let parts = route.split(separator: " ").map(String.init)
                let uri = Self.concrete(parts[1])
                let method = HTTPRequest.Method(rawValue: parts[0])!
                let body: String? = method == .get || method == .delete ? nil : "{}"
                let (anonymous, refusal) = try await requestJSON(client, method, uri, body: body)
                #expect(anonymous == .unauthorized, "\(route) without credentials: \(anonymous) \(refusal)")
                let (forbidden, denial) = try await requestJSON(
                    client, method, uri, body: body, headers: [HTTPField.Name("X-API-Key")!: Self.outsiderKey])
                #expect(forbidden == .forbidden, "\(route) without \(permission): \(forbidden) \(denial)")
                #expect(denial["error"]?["message"]?.stringValue == "Missing required permission: \(permission)", "\(route)")
            }
            #expect(
                open == [
                    "GET /api-docs/openapi.json", "GET /health", "GET /health/detailed", "GET /health/live", "GET /health/ready",
                    "GET /metrics",
                ])
        }
    }

    @Test func theDocumentIsServedAndSwaggerUIShowsItWithAuthOn() async throws {
        try await Self.withRouter { _, client in
            let (status, headers, body) = try await client.execute(uri: "/api-docs/openapi.json", method: .get) { response in
                (response.status, response.headers, Data(response.body.readableBytesView))
            }
            #expect(status == .ok && headers[.contentType] == "application/json")
            #expect(try JSONDecoder().decode(JSONValue.self, from: body) == OrchestrationOpenAPIDocument.make())
            #expect(body == OrchestrationOpenAPIDocument.encoded)
            let (redirect, location) = try await client.execute(uri: "/api-docs/ui", method: .get) { ($0.status, $0.headers[.location]) }
            #expect(redirect == .seeOther && location == "/api-docs/ui/")
            let (index, type) = try await client.execute(uri: "/api-docs/ui/", method: .get) { ($0.status, $0.headers[.contentType]) }
            #expect(index == .ok && type == "text/html")
            let initializer = try await client.execute(uri: "/api-docs/ui/swagger-initializer.js", method: .get) {
                ($0.status, String(buffer: $0.body))
            }
            #expect(initializer.0 == .ok && initializer.1.contains(#""url": "/api-docs/openapi.json""#))
            let (missing, _) = try await requestJSON(client, .get, "/api-docs/ui/../openapi.json")
            #expect(missing == .notFound)
        }
    }

    /// The routes both servers have are upstream's: operation id, tag, permission, parameters, request
    /// and success schemas; the schemas both documents name have the same properties (and enum values),
    /// but for the deliberate differences named here; what only one side serves is named too.
    @Test func routesBothServersHaveMatchUpstreamsDocument() throws {
        let upstream = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: Self.upstreamFile))
        let ours = OrchestrationOpenAPIDocument.make()
        let (theirs, mine) = (Self.operations(upstream), Self.operations(ours))
        // Not built (README "The orchestration's task API"), or served by upstream at /health/… since.
        #expect(
            theirs.subtracting(mine).sorted() == [
                "GET /config", "GET /live", "GET /ready", "GET /v1/analytics/bottlenecks", "GET /v1/analytics/performance",
                "GET /v1/templates", "GET /v1/templates/{namespace}/{name}/{version}",
            ])
        // Upstream serves these too; its generated document predates them (the probes under /health, the
        // summary) or leaves them out (the metrics, the document itself).
        #expect(
            mine.subtracting(theirs).sorted() == [
                "GET /api-docs/openapi.json", "GET /health/live", "GET /health/ready", "GET /metrics",
                "GET /v1/tasks/{uuid}/summary",
            ])
        for route in theirs.intersection(mine).sorted() {
            let (a, b) = (Self.operation(upstream, route), Self.operation(ours, route))
            for key in ["operationId", "tags", "x-required-permission"] {
                #expect(a?[key] == b?[key], "\(route) \(key): upstream \(String(describing: a?[key])), ours \(String(describing: b?[key]))")
            }
            for place in ["path", "query"] {
                #expect(Self.parameters(a, in: place) == Self.parameters(b, in: place), "\(route) \(place) parameters")
            }
            #expect(Self.schemaName(a?["requestBody"]) == Self.schemaName(b?["requestBody"]), "\(route) request body")
            let success = { (op: JSONValue?) in Self.members(op?["responses"]).keys.filter { $0.hasPrefix("2") }.sorted() }
            #expect(success(a) == success(b), "\(route) success status")
            if let status = success(a).first {
                #expect(
                    Self.schemaName(a?["responses"]?[status]) == Self.schemaName(b?["responses"]?[status]),
                    "\(route) \(status) schema: upstream \(Self.schemaName(a?["responses"]?[status])), ours \(Self.schemaName(b?["responses"]?[status]))"
                )
            }
        }
        // Ours on purpose: the error body we send, and our own health shapes; upstream's TemplateSummary
        // is its templates API's (not built), ours the summary's `template`.
        let different: Set<String> = ["ApiError", "HealthCheck", "DetailedHealthResponse", "TemplateSummary"]
        let (theirSchemas, ourSchemas) = (Self.members(upstream["components"]?["schemas"]), Self.members(ours["components"]?["schemas"]))
        let shared = Set(theirSchemas.keys).intersection(ourSchemas.keys).subtracting(different)
        for name in [
            "TaskRequest", "TaskResponse", "StepResponse", "StepManualAction", "DlqEntry", "DlqStats",
            "DlqInvestigationQueueEntry", "StalenessMonitoring", "UpdateInvestigationRequest", "UpdateInvestigationResponse",
            "DlqReason", "DlqResolutionStatus",
        ] {
            #expect(shared.contains(name), "\(name) is not a schema of both documents")
        }
        for name in shared.sorted() {
            #expect(
                Self.properties(theirSchemas[name]) == Self.properties(ourSchemas[name]),
                "\(name): upstream \(Self.properties(theirSchemas[name]).sorted()), ours \(Self.properties(ourSchemas[name]).sorted())")
            #expect(theirSchemas[name]?["enum"] == ourSchemas[name]?["enum"], "\(name) enum values")
        }
    }

    // MARK: - Helpers

    static func members(_ value: JSONValue?) -> [String: JSONValue] {
        if case .object(let members)? = value { return members }
        return [:]
    }

    static func items(_ value: JSONValue?) -> [JSONValue] {
        if case .array(let items)? = value { return items }
        return []
    }

    /// A documented path with each `{parameter}` replaced by a uuid.
    static func concrete(_ path: String) -> String {
        path.split(separator: "/").map { $0.hasPrefix("{") ? UUID().uuidString.lowercased() : String($0) }
            .reduce("") { $0 + "/" + $1 }
    }

    /// The names of an operation's parameters in `place` (`path`, `query`).
    static func parameters(_ operation: JSONValue?, in place: String) -> Set<String> {
        Set(items(operation?["parameters"]).filter { $0["in"]?.stringValue == place }.compactMap { $0["name"]?.stringValue })
    }

    /// The schema a request body or response names (`Name`, or `[Name]` for an array of it).
    static func schemaName(_ carrier: JSONValue?) -> String? {
        guard let schema = members(carrier?["content"]).values.first?["schema"] else { return nil }
        if let ref = schema["$ref"]?.stringValue { return String(ref.split(separator: "/").last ?? "") }
        if let ref = schema["items"]?["$ref"]?.stringValue { return "[" + String(ref.split(separator: "/").last ?? "") + "]" }
        return schema["type"]?.stringValue
    }

    /// A schema's property names (of each `oneOf` variant too).
    static func properties(_ schema: JSONValue?) -> Set<String> {
        var names = Set(members(schema?["properties"]).keys)
        for variant in items(schema?["oneOf"]) { names.formUnion(members(variant["properties"]).keys) }
        return names
    }
}
