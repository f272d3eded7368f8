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

/// Cross-site request forgery (issue #26, item 3): `CrossSiteRequestGuard`'s decisions; non-browser
/// clients (no `Origin`, no `Sec-Fetch-*`) pass. Both REST servers over real sockets:
/// `CrossSiteServerTests` in TaskerSystemTests; the browser itself is in
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
}
