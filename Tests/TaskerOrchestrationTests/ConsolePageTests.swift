import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration

/// The task console's page and its files (`ConsoleRoutes`) with the console's Content-Security-Policy,
/// and its auth settings, served without a database. (The console's JSON on a test database:
/// `ConsoleRoutesTests` in TaskerSystemTests.)
@Suite(.timeLimit(.minutes(3))) struct ConsolePageTests {
    @Test func thePageAndItsFilesAreServedWithTheConsolePolicy() async throws {
        try await OrchestrationTaskAPIRoutesTests.withRoutes { client in
            for (path, type) in [
                ("/console", "text/html; charset=utf-8"), ("/console/console.js", "text/javascript; charset=utf-8"),
                ("/console/console.css", "text/css; charset=utf-8"),
            ] {
                let (status, headers, body) = try await client.execute(uri: path, method: .get) { response in
                    (response.status, response.headers, String(buffer: response.body))
                }
                #expect(status == .ok, "\(path)")
                #expect(headers[.contentType] == type, "\(path)")
                #expect(headers[.contentSecurityPolicy] == ConsoleRoutes.contentSecurityPolicy, "\(path)")
                #expect(!body.isEmpty)
            }
            let (auth, settings) = try await requestJSON(client, .get, "/console/api/auth")
            #expect(auth == .ok && settings["enabled"]?.boolValue == false && settings["api_key_header"]?.stringValue == "X-API-Key")
            let (unknown, _) = try await requestJSON(client, .get, "/console/nothing-here")
            #expect(unknown == .notFound)
        }
    }

    /// The live workers and the throughput chart are behind `system:analytics_read` (upstream's
    /// permission of its analytics routes): refused before any read without credentials (401) and
    /// with a key that lacks it (403). (Their answers on a test database: `ConsoleRoutesTests`.)
    @Test func theWorkersAndTheChartNeedAnalyticsRead() async throws {
        var auth = WorkerConfiguration.Auth()
        auth.enabled = true
        auth.apiKeysEnabled = true
        auth.apiKeys = [WorkerConfiguration.APIKey(key: "lister-key-0123456789", permissions: ["tasks:list", "dlq:read"])]
        try await OrchestrationTaskAPIRoutesTests.withRoutes(auth: auth) { client in
            for path in ["/console/api/workers", "/console/api/throughput"] {
                let (anonymous, _) = try await requestJSON(client, .get, path)
                #expect(anonymous == .unauthorized, "\(path)")
                let (lister, refusal) = try await requestJSON(
                    client, .get, path, headers: [HTTPField.Name("X-API-Key")!: "lister-key-0123456789"])
                #expect(lister == .forbidden, "\(path)")
                #expect(refusal["error"]?["message"]?.stringValue?.contains("system:analytics_read") == true, "\(refusal)")
            }
        }
    }
}
