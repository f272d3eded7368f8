import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import HTTPTypes
import HummingbirdTesting
import Logging
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// The operator surface of a running worker (boot log, health, template errors) that must never show a
/// password, the database's own error text or SQL. (`Redaction.redactCredentials` on every
/// connection-string form libpq reads: `CredentialRedactionTests` in TaskerPostgresTests; `config check`:
/// `ConfigurationCheckRedactionTests` in TaskerModelTests.)
@Suite("Credential redaction and generic operator errors", .timeLimit(.minutes(3)))
struct CredentialRedactionTests {
    /// A worker booted with a keyword/value DSN whose quoted password has a blank and an escaped quote
    /// (libpq reads it; trust auth ignores it): the boot log line names the database without the password.
    @Test func bootLogHidesAKeywordDSNPassword() async throws {
        try await withTestDatabase { db in
            let parts = try #require(URLComponents(string: db.url))
            let secret = #"kw s3cret\'x"#
            let dsn =
                "host=\(parts.host ?? "127.0.0.1") port=\(parts.port ?? 5432) dbname=\(parts.path.dropFirst()) "
                + "user=\(parts.user ?? "tasker") password='\(secret)'"
            var configuration = WebTestWorker.configuration(db)
            configuration.common.database.url = dsn
            let capture = LogCapture()
            let daemon = WorkerDaemon(
                configuration: configuration,
                templateLoader: TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": "/nonexistent-\(UUID().uuidString)"]),
                logger: Logger(label: "tasker.worker") { WorkerLogHandler(label: $0, output: capture.output, format: .text, level: .info) })
            let worker = PipelineHarness.RunningWorker(daemon: daemon, task: Task { try await daemon.run() })
            // Logged after the templates were registered through the pool, so the DSN really connected.
            try await waitUntil(timeout: .seconds(30)) { capture.all.contains { $0.contains("tasker worker starting") } }
            try await worker.stop()
            let boot = try #require(capture.all.first { $0.contains("tasker worker starting") })
            #expect(boot.contains("password='***'") && boot.contains("dbname=\(parts.path.dropFirst())"), "\(boot)")
            #expect(!boot.contains("s3cret"), "\(boot)")
        }
    }

    /// A worker whose `DATABASE_URL` carries `?password=` (ignored by the test cluster's trust auth):
    /// while the database refuses connections, `/health/detailed` and a template error body name the
    /// failure but show neither the password nor the database's message.
    @Test func healthAndTemplateErrorsNeverShowThePasswordOrLibpqText() async throws {
        try await withTestDatabase { db in
            let secret = "pw-\(UUID().uuidString.prefix(8))"
            let url = db.url + (db.url.contains("?") ? "&" : "?") + "password=\(secret)"
            let worker = try await WebTestWorker.start(db) { $0.common.database.url = url }
            let admin = try await PostgresConnection.connect(url: try TestEnvironment.adminURL())
            try await admin.query("ALTER DATABASE \"\(db.name)\" ALLOW_CONNECTIONS false")
            try await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", [db.name])

            // Several unhealthy answers: the first may come from a broken connection, later ones from
            // failed connection attempts (whose error quotes the URL and the server's FATAL message).
            var unhealthy = 0
            try await waitUntil(timeout: .seconds(20)) {
                let body = try await worker.get("/health/detailed").text
                #expect(!body.contains(secret), "\(body)")
                #expect(!body.contains("FATAL") && !body.contains("accepting connections"), "\(body)")
                if body.contains("Database connection failed") { unhealthy += 1 }
                return unhealthy >= 3
            }
            let detailed = try await worker.get("/health/detailed").json()
            #expect(detailed["checks"]?["database"]?["message"] == "Database connection failed: database unavailable")

            let response = try await worker.get("/v1/templates", headers: [RequestIDMiddleware.header: "req-redaction-1"])
            #expect(response.status == .internalServerError)
            let body = try response.json()
            #expect(body["error"] == "internal_error")
            #expect(body["request_id"] == "req-redaction-1")
            #expect(
                body["message"]
                    == "Internal error: database unavailable (see the worker log for request req-redaction-1)")
            #expect(!response.text.contains(secret) && !response.text.contains("FATAL"), "\(response.text)")

            try await admin.query("ALTER DATABASE \"\(db.name)\" ALLOW_CONNECTIONS true")
            try await waitUntil(timeout: .seconds(30)) { try await worker.get("/health/ready").status == .ok }
            await admin.close()
            try await worker.stop()
        }
    }

    /// A statement error while answering a template query (the table is gone): REST says
    /// `database error (SQLSTATE 42P01)` and gRPC INTERNAL says the same, neither with the SQL or the
    /// server's message.
    @Test func aDatabaseErrorInATemplateQueryGivesAGenericBody() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db)
            try await worker.admin.query("ALTER TABLE tasker.named_tasks RENAME TO named_tasks_gone")
            let forbidden = ["SELECT", "named_tasks", "does not exist", "relation", "JOIN"]

            let list = try await worker.get("/v1/templates", headers: [RequestIDMiddleware.header: "req-sql-1"])
            #expect(list.status == .internalServerError)
            #expect(
                try list.json()["message"]
                    == "Internal error: database error (SQLSTATE 42P01) (see the worker log for request req-sql-1)")
            let one = try await worker.get("/v1/templates/webtest/greet/1.0.0")
            #expect(one.status == .internalServerError)
            for text in [list.text, one.text] {
                for word in forbidden { #expect(!text.contains(word), "\(word) in \(text)") }
            }

            let (host, port) = try GRPCServerTests.split(try #require(worker.daemon.boundAddresses.grpc))
            try await withGRPCClient(
                transport: .http2NIOPosix(
                    target: .ipv4(address: host, port: port),
                    transportSecurity: .plaintext)
            ) { client in
                let templates = Tasker_V1_WorkerTemplateService.Client(wrapping: client)
                let error = await #expect(throws: RPCError.self) { _ = try await templates.listTemplates(.init()) }
                #expect(error?.code == .internalError)
                let message = error?.message ?? ""
                #expect(
                    message.hasPrefix("Internal error: database error (SQLSTATE 42P01) (see the worker log for request "),
                    "\(message)")
                for word in forbidden { #expect(!message.contains(word), "\(word) in \(message)") }
            }
            try await worker.admin.query("ALTER TABLE tasker.named_tasks_gone RENAME TO named_tasks")
            try await worker.stop()
        }
    }
}
