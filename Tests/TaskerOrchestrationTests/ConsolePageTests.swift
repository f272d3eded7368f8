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
}
