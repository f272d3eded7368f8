import Foundation
import Logging
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Issue #11 items 10 and 11 without a worker: the default maximum token lifetime, the bearer scheme in
/// any case, and text log lines that stay one line. (On the running worker: `SurfaceHardeningTests` in
/// TaskerSystemTests.)
@Suite("Operator surface hardening: tokens and log lines", .timeLimit(.minutes(2)))
struct OperatorHardeningTests {
    @Test func defaultMaximumLifetimeRejectsTokensLongerThan168Hours() async throws {
        #expect(WorkerConfiguration.Auth().jwtMaxTokenLifetimeSeconds == 604_800)
        let authenticator = try await WorkerAuthenticator(configuration: authConfig())
        let now = Int64(Date().timeIntervalSince1970)
        let week = try await readerToken(["iat": .int(now), "exp": .int(now + 604_800)])
        let longer = try await readerToken(["iat": .int(now), "exp": .int(now + 604_801 + 3600)])
        let off = try await WorkerAuthenticator(configuration: authConfig { $0.jwtMaxTokenLifetimeSeconds = 0 })
        #expect(
            try await authenticator.authenticate(AuthCredentials(authorization: "Bearer \(week)", apiKey: nil)).get()
                .subject == "svc-test")
        await #expect(throws: AuthFailure.self) {
            try await authenticator.authenticate(AuthCredentials(authorization: "Bearer \(longer)", apiKey: nil)).get()
        }
        #expect(
            try await off.authenticate(AuthCredentials(authorization: "Bearer \(longer)", apiKey: nil)).get()
                .subject == "svc-test")
        // An `iat` in the future does not stretch the limit: the lifetime counts from now.
        for futureIssued in [
            try await readerToken(["iat": .int(now + 30 * 86_400 - 600), "exp": .int(now + 30 * 86_400)]),
            try await readerToken(["iat": .int(now + 1_000_000_000), "exp": .int(now + 1_000_000_060)]),
        ] {
            await #expect(throws: AuthFailure.self) {
                try await authenticator.authenticate(AuthCredentials(authorization: "Bearer \(futureIssued)", apiKey: nil)).get()
            }
        }
    }

    @Test func bearerSchemeParsing() {
        #expect(WorkerAuthenticator.bearerToken("Bearer abc") == "abc")
        #expect(WorkerAuthenticator.bearerToken("bearer abc") == "abc")
        #expect(WorkerAuthenticator.bearerToken("BEARER  abc") == "abc")
        #expect(WorkerAuthenticator.bearerToken("Bearerabc") == nil)
        #expect(WorkerAuthenticator.bearerToken("Basic abc") == nil)
        #expect(WorkerAuthenticator.bearerToken("Bearer ") == nil)
    }

    @Test func textLogLinesCannotBeForgedWithNewlines() {
        let capture = LogCapture()
        let logger = Logger(label: "tasker.test") { WorkerLogHandler(label: $0, output: capture.output, format: .text, level: .info) }
        logger.info(
            "step failed\n2026-01-01T00:00:00.000Z error tasker.fake: forged",
            metadata: [
                "reason": "a\nb", "spaced": "x\r\ny z", "bell": "\u{07}", "nested": ["k\nk": "v\u{2028}w"], "ok": "plain",
            ])
        let lines = capture.all
        #expect(lines.count == 1)
        let line = lines.joined()
        #expect(line.hasSuffix("\n") && line.dropLast().firstIndex(where: { $0.isNewline }) == nil, "\(line)")
        #expect(line.contains(#"tasker.test: step failed\n2026-01-01T00:00:00.000Z error tasker.fake: forged "#), "\(line)")
        #expect(line.contains(#"reason="a\nb""#), "\(line)")
        #expect(line.contains(#"spaced="x\r\ny z""#), "\(line)")
        #expect(line.contains(#"bell="\u0007""#), "\(line)")
        #expect(line.contains(#"nested={k\nk="v\u2028w"}"#), "\(line)")
        #expect(line.contains(" ok=plain"), "\(line)")
    }
}
