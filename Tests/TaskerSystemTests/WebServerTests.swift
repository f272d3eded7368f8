import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SwiftProtobuf
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// The REST server of a real `WorkerDaemon` over a real socket (127.0.0.1, free port), against a
/// real PostgreSQL: bodies field by field against the upstream schemas (worker-contract Appendix B).
@Suite("REST server", .timeLimit(.minutes(3)))
struct WebServerTests {
    // MARK: - Health

    @Test
    func healthBodiesMatchTheUpstreamSchemas() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db)
            let publicID = worker.daemon.identity.publicID

            for (path, status) in [("/health", "healthy"), ("/health/live", "alive")] {
                let response = try await worker.get(path)
                #expect(response.status == .ok, "\(path)")
                let body = try response.json()
                #expect(body.keys == ["status", "timestamp", "worker_id"], "\(path)")
                #expect(body["status"] == .string(status))
                #expect(body["worker_id"] == .string(publicID))
                #expect(WebTestWorker.isTimestamp(body["timestamp"]), "\(path): \(String(describing: body["timestamp"]))")
            }

            let ready = try await worker.get("/health/ready")
            #expect(ready.status == .ok)
            let readiness = try ready.json()
            #expect(readiness.keys == ["checks", "status", "system_info", "timestamp", "worker_id"])
            #expect(readiness["status"] == "ready")
            #expect(readiness["worker_id"] == .string(publicID))
            let checks = try #require(readiness["checks"])
            #expect(checks.keys == ["command_processor", "database", "queue_processing"])
            for name in checks.keys { WebTestWorker.expectHealthCheck(checks[name], status: "healthy", name) }
            WebTestWorker.expectSystemInfo(readiness["system_info"], namespaces: ["webtest"])

            let detailedResponse = try await worker.get("/health/detailed")
            #expect(detailedResponse.status == .ok)
            // The pool's f64 figures are floats (`4.0`, not `4`), as upstream's serde writes them.
            let float = try Regex(#""utilization_percent":-?\d+\.\d+"#)
            #expect(detailedResponse.text.contains(float), "\(detailedResponse.text)")
            let detailed = try detailedResponse.json()
            // Upstream's keys plus ours, `step_recovery` (crash recovery, Sources/TaskerWorker/Recovery).
            #expect(
                detailed.keys == ["checks", "distributed_cache", "status", "step_recovery", "system_info", "timestamp", "worker_id"])
            #expect(detailed["step_recovery"]?["liveness_lease_held"] == true)
            #expect(detailed["status"] == "healthy")
            let all = try #require(detailed["checks"])
            #expect(
                all.keys == [
                    "circuit_breakers", "command_processor", "database", "event_system",
                    "queue_processing", "step_processing",
                ])
            for name in all.keys { WebTestWorker.expectHealthCheck(all[name], status: "healthy", name) }
            #expect(all["circuit_breakers"]?["message"] == "No circuit breakers configured")
            #expect(all["step_processing"]?["message"]?.stringValue?.hasPrefix("0 steps executed") == true)
            #expect(detailed["distributed_cache"] == ["enabled": false, "provider": "noop", "healthy": true])
            WebTestWorker.expectSystemInfo(detailed["system_info"], namespaces: ["webtest"])
            try await worker.stop()
        }
    }

    @Test
    func readinessIs503WithTheUpstreamErrorBodyWhileClaimingIsOff() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db)
            worker.daemon.setClaiming(false)
            // Probes share one evaluation, reused for up to a second (HealthProbeCache).
            try await waitUntil { try await worker.get("/health/ready").status == .serviceUnavailable }

            let response = try await worker.get("/health/ready", headers: [RequestIDMiddleware.header: "probe-42"])
            #expect(response.status == .serviceUnavailable)
            let body = try response.json()
            #expect(body.keys == ["error", "message", "request_id", "timestamp"])
            #expect(body["error"] == "service_unavailable")
            #expect(body["message"] == "Worker is not ready to process steps")
            #expect(body["request_id"] == "probe-42")
            #expect(response.headers[RequestIDMiddleware.header] == "probe-42")
            #expect(WebTestWorker.isTimestamp(body["timestamp"]))

            let detailed = try await worker.get("/health/detailed").json()
            #expect(detailed["status"] == "degraded")
            #expect(detailed["checks"]?["command_processor"]?["status"] == "degraded")
            #expect(detailed["checks"]?["database"]?["status"] == "healthy")
            #expect(detailed["system_info"]?["command_processor_active"] == false)
            #expect(try await worker.get("/health/live").status == .ok)

            worker.daemon.setClaiming(true)
            try await waitUntil { try await worker.get("/health/ready").status == .ok }
            try await worker.stop()
        }
    }

    @Test
    func readinessIs503WhileTheDatabaseIsUnreachableAndRecovers() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db)
            #expect(try await worker.get("/health/ready").status == .ok)
            let admin = try await PostgresConnection.connect(url: try TestEnvironment.adminURL())
            try await admin.query("ALTER DATABASE \"\(db.name)\" ALLOW_CONNECTIONS false")
            try await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", [db.name])

            try await waitUntil(timeout: .seconds(15)) { try await worker.get("/health/ready").status == .serviceUnavailable }
            // Readiness may fail first for the liveness lease it cannot renew.
            try await waitUntil(timeout: .seconds(15)) {
                try await worker.get("/health/detailed").json()["checks"]?["database"]?["status"] == "unhealthy"
            }
            let detailed = try await worker.get("/health/detailed")
            #expect(detailed.status == .ok)
            let checks = try detailed.json()["checks"]
            #expect(checks?["database"]?["status"] == "unhealthy")
            #expect(checks?["database"]?["message"]?.stringValue?.isEmpty == false)
            #expect(checks?["queue_processing"]?["status"] == "unhealthy")
            #expect(try await worker.get("/health").status == .ok)
            #expect(try await worker.get("/health/live").status == .ok)
            // gRPC says the same: grpc.health.v1 NOT_SERVING, CheckReadiness UNAVAILABLE, liveness answers.
            let (host, port) = try GRPCServerTests.split(try #require(worker.daemon.boundAddresses.grpc))
            try await withGRPCClient(
                transport: .http2NIOPosix(
                    target: .ipv4(address: host, port: port),
                    transportSecurity: .plaintext)
            ) { client in
                let standard = Grpc_Health_V1_Health.Client(wrapping: client)
                try await waitUntil(timeout: .seconds(15)) {
                    try await standard.check(.with { $0.service = "" }).status == .notServing
                }
                let health = Tasker_V1_WorkerHealthService.Client(wrapping: client)
                await #expect(throws: RPCError.self) { _ = try await health.checkReadiness(.init()) }
                #expect(try await health.checkLiveness(.init()).status == "alive")
            }

            try await admin.query("ALTER DATABASE \"\(db.name)\" ALLOW_CONNECTIONS true")
            try await waitUntil(timeout: .seconds(30)) { try await worker.get("/health/ready").status == .ok }
            await admin.close()
            try await worker.stop()
        }
    }

    // MARK: - Templates

    @Test
    func templateListHonoursIncludeCacheStatsAndRejectsABadValue() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db)
            let plain = try await worker.get("/v1/templates?namespace=ignored")
            #expect(plain.status == .ok)
            let list = try plain.json()
            #expect(list.keys == ["cache_stats", "supported_namespaces", "template_count", "templates", "worker_capabilities"])
            #expect(list["cache_stats"] == .null)
            #expect(list["supported_namespaces"] == ["webtest"])
            #expect(list["template_count"] == 2)
            // What it counts, listed (ours only): both templates of the namespace, sorted.
            guard case .array(let listed)? = list["templates"] else {
                Issue.record("no templates array: \(list)")
                return
            }
            #expect(listed.count == 2)
            #expect(listed.allSatisfy { $0["namespace"] == "webtest" && $0["version"] != nil && $0["name"] != nil })
            #expect(listed.compactMap { $0["name"]?.stringValue } == listed.compactMap { $0["name"]?.stringValue }.sorted())
            #expect(list["worker_capabilities"] == ["command_processing", "database_access", "message_queues", "ffi_integration"])

            let withStats = try await worker.get("/v1/templates?include_cache_stats=true").json()
            let stats = try #require(withStats["cache_stats"])
            #expect(
                stats.keys == [
                    "average_access_count", "cache_evictions", "cache_hits", "cache_misses",
                    "oldest_entry_age_seconds", "supported_namespaces", "total_cached",
                ])
            #expect(stats["total_cached"] == 2)
            #expect(stats["supported_namespaces"] == ["webtest"])
            #expect(try await worker.get("/v1/templates?include_cache_stats=false").json()["cache_stats"] == .null)

            let bad = try await worker.get("/v1/templates?include_cache_stats=maybe")
            #expect(bad.status == .badRequest)
            let error = try bad.json()
            #expect(error.keys == ["error"])
            #expect(error["error"]?["code"] == "BAD_REQUEST")
            #expect(error["error"]?["message"]?.stringValue?.contains("include_cache_stats") == true)
            try await worker.stop()
        }
    }

    @Test
    func templateLookupAnd404Bodies() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db)
            let found = try await worker.get("/v1/templates/webtest/greet/1.0.0")
            #expect(found.status == .ok)
            let body = try found.json()
            #expect(body.keys == ["access_count", "cache_age_seconds", "cached", "handler_metadata", "template"])
            #expect(body["access_count"] == .null)
            #expect(body["cache_age_seconds"] == .null)
            #expect(body["cached"] == true)
            let resolved = try #require(body["template"])
            #expect(resolved.keys == ["environment", "resolved_at", "template"])
            #expect(resolved["environment"] == .string(TaskerConfiguration().common.execution.environment))
            #expect(resolved["template"]?["name"] == "greet")
            #expect(resolved["template"]?["namespace_name"] == "webtest")
            #expect(resolved["template"]?["steps"]?.arrayCount == 2)
            let metadata = try #require(body["handler_metadata"])
            #expect(
                metadata.keys == [
                    "config_schema", "default_dependent_system", "handler_class", "name", "namespace",
                    "registered_at", "version",
                ])
            #expect(metadata["namespace"] == "webtest")
            #expect(metadata["name"] == "greet")
            #expect(metadata["version"] == "1.0.0")
            // As upstream 0.1.8 fills them (seen live, bindings/python/tests/test_contract.py).
            #expect(metadata["default_dependent_system"] == .null)
            #expect(metadata["handler_class"] == "")
            #expect(metadata["config_schema"]?["name"] == "greet")
            #expect(WebTestWorker.isTimestamp(metadata["registered_at"]))

            let missing = try await worker.get("/v1/templates/webtest/nope/1.0.0")
            #expect(missing.status == .notFound)
            let error = try missing.json()
            #expect(error.keys == ["error", "message", "request_id", "timestamp"])
            #expect(error["error"] == "template_not_found")
            #expect(error["message"] == "Template not found: webtest/nope/1.0.0")
            #expect(error["request_id"] == missing.headers[RequestIDMiddleware.header].map(JSONValue.string))
            // Another namespace than this worker's is no template of this worker.
            #expect(try await worker.get("/v1/templates/other/greet/1.0.0").json()["error"] == "template_not_found")
            // Path parameters are percent-decoded (as axum's Path); one that is not UTF-8 is a 400.
            #expect(try await worker.get("/v1/templates/webtest/gr%65et/1.0.0").status == .ok)
            #expect(try await worker.get("/v1/templates/webtest/gr%ffet/1.0.0").status == .badRequest)

            // The registration row gone while the template is still cached: no handler metadata.
            try await worker.admin.query("DELETE FROM tasker.named_tasks WHERE name = 'greet'")
            let orphan = try await worker.get("/v1/templates/webtest/greet/1.0.0")
            #expect(orphan.status == .notFound)
            #expect(try orphan.json()["error"] == "handler_metadata_not_found")
            try await worker.stop()
        }
    }

    @Test
    func templateValidation() async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db)
            let ok = try await worker.post("/v1/templates/webtest/greet/1.0.0/validate")
            #expect(ok.status == .ok)
            let valid = try ok.json()
            #expect(
                valid == [
                    "valid": true, "errors": [], "required_capabilities": [],
                    "step_handlers": ["tasker.echo", "tasker.noop"],
                ])

            let broken = try await worker.post("/v1/templates/webtest/broken/2.0.0/validate").json()
            #expect(broken["valid"] == false)
            #expect(broken["required_capabilities"] == ["database_access", "external_api", "ffi"])
            #expect(broken["step_handlers"] == ["ExternalDatabaseFFI.Handler"])
            #expect(broken["errors"] == [#"step "call_api": no handler registered for callable "ExternalDatabaseFFI.Handler""#])

            let missing = try await worker.post("/v1/templates/webtest/nope/1.0.0/validate")
            #expect(missing.status == .notFound)
            #expect(try missing.json()["error"] == "template_not_found")
            try await worker.stop()
        }
    }

    // MARK: - Config

    @Test
    func configIsServedWithoutSecretsOnlyWhenEnabled() async throws {
        try await withTestDatabase { db in
            let secret = "sk-very-secret-\(UUID().uuidString)"
            let worker = try await WebTestWorker.start(db) { configuration in
                configuration.worker.web.configEndpointEnabled = true
                configuration.worker.web.auth.apiKeys = [.init(key: secret, permissions: ["worker:config_read"])]
                configuration.worker.web.auth.jwtPublicKey = "-----BEGIN PUBLIC KEY-----\(secret)"
            }
            let response = try await worker.get("/config")
            #expect(response.status == .ok)
            #expect(!response.text.contains(secret))
            let body = try response.json()
            #expect(body.keys == ["auth", "messaging", "metadata", "worker_id", "worker_type"])
            #expect(body["worker_id"] == "worker-default-001")
            #expect(body["worker_type"] == "general")
            #expect(body["metadata"]?.keys == ["environment", "timestamp", "version"])
            #expect(body["metadata"]?["version"] == .string(TaskerWorkerVersion.current))
            #expect(
                body["auth"] == [
                    "enabled": false, "verification_method": "public_key", "jwt_issuer": "tasker-worker",
                    "jwt_audience": "worker-api", "api_key_header": "X-API-Key", "api_key_count": 1,
                    "strict_validation": true, "allowed_algorithms": ["RS256"],
                ])
            #expect(body["messaging"] == ["backend": "pgmq", "queues": ["worker_webtest_queue", "orchestration_step_results"]])
            try await worker.stop()

            let closed = try await WebTestWorker.start(db)
            let notMounted = try await closed.get("/config")
            #expect(notMounted.status == .notFound && notMounted.text.isEmpty)
            try await closed.stop()
        }
    }
}

extension JSONValue {
    /// The keys of an object, sorted (empty for anything else).
    var keys: [String] {
        if case .object(let members) = self { return members.keys.sorted() }
        return []
    }

    var arrayCount: Int? {
        if case .array(let items) = self { return items.count }
        return nil
    }
}
