import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import TaskerTestSupport
import Testing

@testable import TaskerAuth
@testable import TaskerHTTP
@testable import TaskerModel
@testable import TaskerWorker

/// Cross-site request forgery (issue #26, item 3) over real sockets: both REST servers refuse a
/// cross-site browser request or a body that is not JSON, while non-browser clients keep working
/// (`CrossSiteRequestGuard`'s decisions: `CrossSiteRequestGuardTests` in TaskerWorkerTests).
@Suite("Cross-site requests refused by both REST servers", .timeLimit(.minutes(3)))
struct CrossSiteServerTests {
    /// The orchestration: a text/plain or form body, or another origin, creates no task; the same
    /// request as JSON from a non-browser client creates one.
    @Test func theOrchestrationRefusesCrossSiteAndNonJSONTaskCreation() async throws {
        try await LiveOrchestrationAPI.with { api in
            let body = OrchestrationTaskAPITests.linearRequest
            let plain = try await api.request("POST", "/v1/tasks", headers: [("Content-Type", "text/plain;charset=UTF-8")], body: body)
            #expect(plain.status == 415 && plain.json["error"]?["code"] == "UNSUPPORTED_MEDIA_TYPE", "\(plain.body)")
            #expect(plain.json["error"]?["message"]?.stringValue?.contains("text/plain") == true)
            let form = try await api.request(
                "POST", "/v1/tasks", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: "a=\(body)")
            #expect(form.status == 415, "\(form.body)")
            let none = try await api.request("POST", "/v1/tasks", body: body)
            #expect(none.status == 415, "\(none.body)")
            let crossSite = try await api.request(
                "POST", "/v1/tasks",
                headers: [("Content-Type", "application/json"), ("Origin", "http://127.0.0.1:1"), ("Sec-Fetch-Site", "same-site")],
                body: body)
            #expect(crossSite.status == 403 && crossSite.json["error"]?["code"] == "FORBIDDEN", "\(crossSite.body)")
            let cancel = try await api.request("DELETE", "/v1/tasks/\(UUID().uuidString)", headers: [("Origin", "http://evil.example")])
            #expect(cancel.status == 403, "\(cancel.body)")
            #expect(try await api.taskCount() == 0)

            let sameOrigin = try await api.request(
                "POST", "/v1/tasks", headers: [("Content-Type", "application/json"), ("Origin", "http://\(api.authority)")], body: body)
            #expect(sameOrigin.status == 201, "\(sameOrigin.body)")
            #expect(try await api.taskCount() == 1)
        }
    }

    /// The worker: template validation (its one POST) behind the same guard.
    @Test func theWorkerRefusesCrossSiteValidation() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db)
            do {
                let path = "/v1/templates/webtest/greet/1.0.0/validate"
                let crossSite = try await worker.post(
                    path, headers: [.origin: "http://evil.example", HTTPField.Name("Sec-Fetch-Site")!: "cross-site"])
                #expect(crossSite.status == .forbidden)
                let body = try crossSite.json()
                #expect(body["error"]?["code"] == "FORBIDDEN", "\(body)")
                let plain = try await worker.execute(
                    TestClient.Request(path, method: .post, headers: [.contentType: "text/plain"], body: ByteBuffer(string: "x")))
                #expect(plain.status.code == 415)
                #expect(try await worker.post(path).status == .ok)
            } catch {
                try? await worker.stop()
                throw error
            }
            try await worker.stop()
        }
    }
}
