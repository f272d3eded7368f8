import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration

/// Task requests PostgreSQL cannot store as sent (issue #26, item 8), against the real server and
/// database: each is a 400 `BAD_REQUEST` naming the field and what was wrong, never a 500, never
/// stored altered; nothing is created.
@Suite(.timeLimit(.minutes(3))) struct OrchestrationTaskAPIInputTests {
    /// The linear example's request with `fields` (JSON text of each value) replacing or adding members.
    static func request(_ fields: [String: String]) -> String {
        var members = [
            "namespace": #""examples""#, "name": #""linear_workflow""#, "version": #""1.0.0""#,
            "context": #"{"number":3}"#, "initiator": #""api-test""#, "source_system": #""tests""#,
            "reason": #""checking the API""#,
        ]
        members.merge(fields) { _, new in new }
        return "{" + members.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
    }

    static let json = [("Content-Type", "application/json")]

    @Test func everyStringFieldIsCheckedAgainstItsColumnAndForNUL() async throws {
        try await LiveOrchestrationAPI.with { api in
            let long = String(repeating: "x", count: 3 << 20)
            let cases: [(what: String, fields: [String: String], mentions: [String])] = [
                ("NUL in a context value", ["context": #"{"a":{"list":["ok","x\u0000y"]}}"#], [#"context.a.list[1]"#, "NUL"]),
                ("NUL in a context key", ["context": #"{"a":{"b\u0000":1}}"#], [#"context.a["#, "NUL"]),
                ("NUL in the initiator", ["initiator": #""a\u0000b""#], [#""initiator""#, "NUL"]),
                ("NUL in the namespace", ["namespace": #""examples\u0000x""#], [#""namespace""#, "NUL"]),
                ("NUL in a tag", ["tags": #"["fine","t\u0000"]"#], [#""tags[1]""#, "NUL"]),
                ("NUL in the idempotency key", ["idempotency_key": #""k\u0000""#], [#""idempotency_key""#, "NUL"]),
                (
                    "source_system over its column", ["source_system": "\"" + String(repeating: "s", count: 129) + "\""],
                    [#""source_system""#, "129 characters, at most 128"]
                ),
                ("a 3 MiB initiator", ["initiator": "\"\(long)\""], [#""initiator""#, "at most 128"]),
                ("a 3 MiB reason", ["reason": "\"\(long)\""], [#""reason""#, "at most 128"]),
                ("a version over its column", ["version": "\"" + String(repeating: "1", count: 17) + "\""], [#""version""#, "at most 16"]),
                ("priority 2^62", ["priority": "4611686018427387904"], [#""priority""#, "-100...100"]),
                ("priority 101", ["priority": "101"], [#""priority""#, "-100...100"]),
                ("priority -101", ["priority": "-101"], [#""priority""#, "-100...100"]),
                ("priority 2^70", ["priority": "1180591620717411303424"], [#""priority""#]),
            ]
            for (what, fields, mentions) in cases {
                let answer = try await api.request("POST", "/v1/tasks", headers: Self.json, body: Self.request(fields))
                #expect(answer.status == 400, "\(what): \(answer.status) \(answer.body.prefix(300))")
                #expect(answer.json["error"]?["code"] == "BAD_REQUEST", "\(what)")
                let message = answer.json["error"]?["message"]?.stringValue ?? ""
                for text in mentions { #expect(message.contains(text), "\(what): \(message.prefix(300))") }
                #expect(message.count < 1_000, "\(what): the message echoes the value")
            }
            #expect(try await api.taskCount() == 0)

            // The bounds themselves are accepted, and stored as sent.
            let edge = Self.request([
                "priority": "100", "initiator": "\"" + String(repeating: "é", count: 128) + "\"",
                "context": #"{"k":"\\u0000 is text here"}"#,
            ])
            let created = try await api.request("POST", "/v1/tasks", headers: Self.json, body: edge)
            #expect(created.status == 201, "\(created.body.prefix(300))")
            #expect(created.json["priority"] == .int(100) && created.json["initiator"]?.stringValue?.count == 128)
            #expect(created.json["context"]?["k"] == #"\u0000 is text here"#)
        }
    }

    /// A chunked body whose chunk size is not hexadecimal is a 400, not a 500.
    @Test func aMalformedChunkedBodyIsABadRequest() async throws {
        try await LiveOrchestrationAPI.with { api in
            let head =
                "POST /v1/tasks HTTP/1.1\r\nHost: \(api.authority)\r\nContent-Type: application/json\r\n"
                + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            let answer = try await api.send(Array((head + "5\r\n{\"a\":\r\nzz\r\n1}\r\n0\r\n\r\n").utf8))
            #expect(answer.status == 400, "\(answer.head)\n\(answer.body.prefix(300))")
            #expect(try await api.taskCount() == 0)
        }
    }
}
