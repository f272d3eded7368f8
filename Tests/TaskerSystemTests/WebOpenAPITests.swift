import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import TaskerHTTP
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// `/api-docs/openapi.json` describes exactly the routes the router serves, and the bodies the
/// server really returns conform to the document's schemas.
@Suite("REST OpenAPI document", .timeLimit(.minutes(3)))
struct WebOpenAPITests {
    @Test
    func theDocumentListsEveryRouteTheRouterServes() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db) { $0.worker.web.configEndpointEnabled = true }
            let response = try await worker.get("/api-docs/openapi.json")
            #expect(response.status == .ok)
            let document = try response.json()
            #expect(document["openapi"] == "3.1.0")
            #expect(document["info"]?["title"] == "Tasker Worker API")

            let documented = Set(
                try #require(document["paths"]).objectMembers.flatMap { path, item in
                    item.keys.map { "\($0.uppercased()) \(path)" }
                })
            let runtime = worker.daemon.runtime
            // Swagger UI's routes are not in the document (nor in upstream's).
            let served = Set(
                WorkerWebServer.makeRouter(runtime: runtime).routes
                    .filter { !$0.path.description.hasPrefix(SwaggerUIRoutes.path) }
                    .map { "\($0.method.rawValue) \($0.path)" })
            #expect(documented == served)
            for route in [
                "GET /health", "GET /health/live", "GET /health/ready", "GET /health/detailed", "GET /config",
                "GET /v1/templates", "GET /v1/templates/{namespace}/{name}/{version}",
                "POST /v1/templates/{namespace}/{name}/{version}/validate", "GET /metrics",
                "GET /metrics/worker", "GET /metrics/events", "GET /api-docs/openapi.json",
            ] {
                #expect(served.contains(route), "the router does not serve \(route)")
            }

            let schemes = document["components"]?["securitySchemes"]
            #expect(schemes?["bearer_auth"] == ["type": "http", "scheme": "bearer", "bearerFormat": "JWT"])
            #expect(schemes?["api_key_auth"] == ["type": "apiKey", "in": "header", "name": "X-API-Key"])
            let paths = document["paths"]
            #expect(paths?["/config"]?["get"]?["x-required-permission"] == "worker:config_read")
            #expect(paths?["/v1/templates"]?["get"]?["x-required-permission"] == "worker:templates_read")
            #expect(
                paths?["/v1/templates/{namespace}/{name}/{version}"]?["get"]?["x-required-permission"]
                    == "worker:templates_read")
            #expect(
                paths?["/v1/templates/{namespace}/{name}/{version}/validate"]?["post"]?["x-required-permission"]
                    == "templates:validate")
            #expect(paths?["/health"]?["get"]?["x-required-permission"] == nil)
            try await worker.stop()

            // Without the config endpoint, neither the router nor the document has /config.
            let closed = try await WebTestWorker.start(db)
            let closedDocument = try await closed.get("/api-docs/openapi.json").json()
            #expect(closedDocument["paths"]?["/config"] == nil)
            let closedRuntime = closed.daemon.runtime
            #expect(!WorkerWebServer.makeRouter(runtime: closedRuntime).routes.contains { $0.path.description == "/config" })
            // The table behind 405/Allow and HEAD (UpstreamRouting) knows every route the router serves.
            let table = RouteTable.worker(configEndpoint: false)
            for route in WorkerWebServer.makeRouter(runtime: closedRuntime).routes {
                let segments = route.path.description.split(separator: "/").map { $0.hasPrefix("{") || $0.hasPrefix(":") ? "x" : $0 }
                let path = "/" + segments.joined(separator: "/")
                #expect(table.methods(at: path).contains(route.method), "\(route.method) \(path) is not in RouteTable")
            }
            try await closed.stop()
        }
    }

    @Test
    func realBodiesConformToTheDocumentedSchemas() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db) { $0.worker.web.configEndpointEnabled = true }
            let document = try await worker.get("/api-docs/openapi.json").json()
            let checks: [(method: HTTPRequest.Method, uri: String, path: String, status: String)] = [
                (.get, "/health", "/health", "200"),
                (.get, "/health/live", "/health/live", "200"),
                (.get, "/health/ready", "/health/ready", "200"),
                (.get, "/health/detailed", "/health/detailed", "200"),
                (.get, "/config", "/config", "200"),
                (.get, "/v1/templates", "/v1/templates", "200"),
                (.get, "/v1/templates?include_cache_stats=true", "/v1/templates", "200"),
                (.get, "/v1/templates?include_cache_stats=yes", "/v1/templates", "400"),
                (.get, "/v1/templates/webtest/greet/1.0.0", "/v1/templates/{namespace}/{name}/{version}", "200"),
                (.get, "/v1/templates/webtest/nope/1.0.0", "/v1/templates/{namespace}/{name}/{version}", "404"),
                (.post, "/v1/templates/webtest/broken/2.0.0/validate", "/v1/templates/{namespace}/{name}/{version}/validate", "200"),
                (.get, "/metrics/worker", "/metrics/worker", "200"),
                (.get, "/metrics/events", "/metrics/events", "200"),
            ]
            for check in checks {
                let response = try await worker.execute(.init(check.uri, method: check.method))
                if check.status != "default" { #expect("\(response.status.code)" == check.status, "\(check.uri)") }
                let operation = document["paths"]?[check.path]?[check.method.rawValue.lowercased()]
                let schema = try #require(
                    operation?["responses"]?[check.status]?["content"]?["application/json"]?["schema"],
                    "no schema for \(check.uri) \(check.status)")
                let problems = SchemaCheck(document: document).problems(try response.json(), schema, at: check.uri)
                #expect(problems.isEmpty, "\(check.uri): \(problems)")
            }
            // No route: upstream's empty 404, which no operation documents.
            let nowhere = try await worker.get("/nowhere")
            #expect(nowhere.status == .notFound && nowhere.text.isEmpty)
            // The validator itself notices a missing field and an undocumented one.
            let basic: JSONValue = ["$ref": "#/components/schemas/BasicHealthResponse"]
            #expect(!SchemaCheck(document: document).problems(["status": "x", "worker_id": "w"], basic, at: "t").isEmpty)
            #expect(
                !SchemaCheck(document: document).problems(
                    ["status": "x", "worker_id": "w", "timestamp": "2026-01-01T00:00:00Z", "extra": 1], basic, at: "t"
                ).isEmpty)

            let metrics = try await worker.get("/metrics")
            #expect(metrics.status == .ok)
            #expect(document["paths"]?["/metrics"]?["get"]?["responses"]?["200"]?["content"]?.keys.first?.hasPrefix("text/plain") == true)
            try await worker.stop()
        }
    }
}

/// A small JSON Schema (OpenAPI 3.1 subset) checker: `$ref`, `oneOf`, `type` (string or list),
/// `properties`/`required` (no undocumented keys unless `additionalProperties`), `items`, `date-time`.
struct SchemaCheck {
    let document: JSONValue

    func problems(_ value: JSONValue, _ schema: JSONValue, at path: String) -> [String] {
        if let ref = schema["$ref"]?.stringValue {
            let name = String(ref.split(separator: "/").last ?? "")
            guard let target = document["components"]?["schemas"]?[name] else { return ["\(path): unknown \(ref)"] }
            return problems(value, target, at: path)
        }
        if case .array(let options)? = schema["oneOf"] {
            return options.contains { problems(value, $0, at: path).isEmpty } ? [] : ["\(path): matches no oneOf option"]
        }
        if let types = schema["type"] {
            let allowed: [String] = types.stringValue.map { [$0] } ?? (types.arrayItems.compactMap(\.stringValue))
            guard allowed.contains(where: { Self.matches(value, type: $0) }) else {
                return ["\(path): \(value) is not \(allowed)"]
            }
        }
        if schema["format"] == "date-time", let text = value.stringValue, ResultTimestamp.parse(text) == nil {
            return ["\(path): \(text) is not a date-time"]
        }
        var found: [String] = []
        if case .object(let members) = value, let properties = schema["properties"] {
            for required in schema["required"]?.arrayItems.compactMap(\.stringValue) ?? [] where members[required] == nil {
                found.append("\(path).\(required): missing")
            }
            for (key, member) in members {
                if let property = properties[key] {
                    found += problems(member, property, at: "\(path).\(key)")
                } else {
                    found.append("\(path).\(key): not in the schema")
                }
            }
        } else if case .object(let members) = value, let additional = schema["additionalProperties"] {
            for (key, member) in members { found += problems(member, additional, at: "\(path).\(key)") }
        }
        if case .array(let items) = value, let itemSchema = schema["items"] {
            for (index, item) in items.enumerated() { found += problems(item, itemSchema, at: "\(path)[\(index)]") }
        }
        return found
    }

    static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object),
            ("integer", .int), ("number", .int), ("number", .double):
            true
        default: false
        }
    }
}

extension JSONValue {
    var objectMembers: [String: JSONValue] {
        if case .object(let members) = self { return members }
        return [:]
    }

    var arrayItems: [JSONValue] {
        if case .array(let items) = self { return items }
        return []
    }
}
