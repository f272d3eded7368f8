import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import TaskerTestSupport
import Testing

@testable import TaskerAuth
@testable import TaskerModel
@testable import TaskerWorker

/// Cross-site request forgery (issue #26, item 3): `CrossSiteRequestGuard`'s decisions, and both REST
/// servers refusing a cross-site browser request or a body that is not JSON over real sockets, while
/// non-browser clients (no `Origin`, no `Sec-Fetch-*`) keep working. The browser itself is in
/// bindings/python/tests/test_cross_site.py (headless Chromium from another origin).
@Suite(.timeLimit(.minutes(3))) struct CrossSiteRequestGuardTests {
    typealias Verdict = CrossSiteRequestGuard.Verdict

    static func verdict(_ method: HTTPRequest.Method, _ fields: [(String, String)], authority: String? = "127.0.0.1:8080") -> Verdict {
        var headers = HTTPFields()
        for (name, value) in fields { headers.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return CrossSiteRequestGuard.verdict(method: method, headers: headers, authority: authority)
    }

    static func isCrossSite(_ verdict: Verdict) -> Bool {
        if case .crossSite = verdict { true } else { false }
    }

    static func isUnsupported(_ verdict: Verdict) -> Bool {
        if case .unsupportedMediaType = verdict { true } else { false }
    }

    @Test func readsPassWhateverTheirHeaders() {
        for method in [HTTPRequest.Method.get, .head, .options] {
            #expect(
                Self.verdict(method, [("Origin", "http://evil.example"), ("Sec-Fetch-Site", "cross-site"), ("Content-Type", "text/plain")])
                    == .allow)
        }
    }

    @Test func nonBrowserClientsPass() {
        let json = [("Content-Type", "application/json"), ("Content-Length", "2")]
        for method in [HTTPRequest.Method.post, .put, .patch, .delete] {
            #expect(Self.verdict(method, json) == .allow, "\(method)")
            // A body-less request needs no content type (DELETE /v1/tasks/{uuid}, POST …/validate).
            #expect(Self.verdict(method, []) == .allow, "\(method)")
            #expect(Self.verdict(method, [("Content-Length", "0")]) == .allow, "\(method)")
            #expect(Self.verdict(method, [("Transfer-Encoding", "chunked")]) == .allow, "\(method)")
        }
        #expect(Self.verdict(.post, [("Content-Type", "Application/JSON; charset=utf-8"), ("Content-Length", "2")]) == .allow)
    }

    @Test func sameOriginBrowserRequestsPass() {
        let json = [("Content-Type", "application/json"), ("Content-Length", "2")]
        #expect(Self.verdict(.post, json + [("Origin", "http://127.0.0.1:8080"), ("Sec-Fetch-Site", "same-origin")]) == .allow)
        #expect(Self.verdict(.post, json + [("Origin", "HTTP://127.0.0.1:8080")]) == .allow)
        #expect(Self.verdict(.post, json + [("Origin", "http://tasker.example")], authority: "tasker.example:80") == .allow)
        #expect(Self.verdict(.post, json + [("Origin", "https://tasker.example:443")], authority: "tasker.example") == .allow)
        #expect(Self.verdict(.delete, [("Sec-Fetch-Site", "none")]) == .allow)
    }

    @Test func crossSiteBrowserRequestsAreRefusedNamingWhy() {
        let json = [("Content-Type", "application/json"), ("Content-Length", "2")]
        let other = Self.verdict(.post, json + [("Origin", "http://127.0.0.1:9999")])
        guard case .crossSite(let message) = other else {
            Issue.record("another port's origin passed: \(other)")
            return
        }
        #expect(message.contains(#"Origin "http://127.0.0.1:9999""#) && message.contains("http://127.0.0.1:8080"), "\(message)")
        for fields in [
            [("Origin", "null")],
            [("Origin", "http://127.0.0.1:8080.evil.example")],
            [("Origin", "http://127.0.0.1:8080/")],
            [("Origin", "file://")],
            [("Sec-Fetch-Site", "cross-site")],
            [("Sec-Fetch-Site", "cross-site"), ("Origin", "http://127.0.0.1:8080")],
            [("Sec-Fetch-Site", "same-site")],
            [("Sec-Fetch-Site", "same-site"), ("Origin", "http://localhost:8080")],
            [("Origin", "http://127.0.0.1:8080"), ("Origin", "http://evil.example")],
        ] {
            #expect(Self.isCrossSite(Self.verdict(.post, json + fields)), "\(fields)")
            #expect(Self.isCrossSite(Self.verdict(.delete, fields)), "\(fields)")
        }
        // Without a Host there is no own origin to match.
        #expect(Self.isCrossSite(Self.verdict(.post, json + [("Origin", "http://127.0.0.1:8080")], authority: nil)))
    }

    @Test func bodiesThatAreNotJSONAreRefusedNamingTheType() {
        let refused = Self.verdict(.post, [("Content-Type", "text/plain;charset=UTF-8"), ("Content-Length", "5")])
        #expect(refused == .unsupportedMediaType(#"Unsupported media type "text/plain;charset=UTF-8": send application/json"#))
        for fields in [
            [("Content-Type", "application/x-www-form-urlencoded"), ("Content-Length", "3")],
            [("Content-Type", "multipart/form-data; boundary=x"), ("Content-Length", "3")],
            [("Content-Type", "application/jsonx"), ("Content-Length", "3")],
            [("Content-Type", "text/plain")],
            [("Content-Length", "3")],
            [("Content-Type", "application/json"), ("Content-Type", "text/plain"), ("Content-Length", "2")],
        ] {
            #expect(Self.isUnsupported(Self.verdict(.post, fields)), "\(fields)")
            #expect(Self.isUnsupported(Self.verdict(.put, fields)), "\(fields)")
        }
    }

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
