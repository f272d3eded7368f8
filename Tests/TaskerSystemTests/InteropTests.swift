import Foundation
import GRPCCore
import HTTPTypes
import HummingbirdTesting
import SwiftProtobuf
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Non-Swift clients against a real worker, proving the wire formats with other implementations:
///
/// - `Tests/Interop/grpc_client.py`: Python `grpcio` stubs generated from `Protos/` at run time call
///   every `tasker.v1` RPC, `grpc.health.v1.Health/Check` and `grpc.reflection.v1` over plaintext;
///   what Python decoded is compared field by field with what the Swift side knows, and read back
///   by SwiftProtobuf it must equal the message the Swift side builds for the same request.
/// - `Tests/Interop/parse_metrics.py`: `/metrics`, fetched over the real REST socket, parsed by
///   `prometheus_client`'s text parser; the step counters must carry this run's values.
///
/// Runs only when `TASKER_TEST_PYTHON` names a python with grpcio, grpcio-tools, protobuf and
/// prometheus-client. `scripts/test` (and so CI, through `.ci/run`) always installs them from PyPI
/// into `.tasker/venv` and sets it; a bare `swift test` skips this suite.
@Suite(
    "Interop (Python grpcio and prometheus_client)",
    .enabled(
        if: InteropEnvironment.python != nil,
        "TASKER_TEST_PYTHON is not set: scripts/test sets it (python with grpcio + prometheus-client)"),
    .timeLimit(.minutes(3)))
struct InteropTests {
    /// `Tests/Interop/` (next to this target's folder; SwiftPM ignores it: it is no target's folder).
    static let interopDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Interop")

    static let yaml = """
        name: interop_probe
        namespace_name: NAMESPACE
        version: 3.1.4
        description: Called from Python
        steps:
          - name: ok_a
            description: First step
            handler: { callable: tasker.noop }
            retry: { retryable: true, max_attempts: 4 }
          - name: ok_b
            handler: { callable: tasker.noop }
            retry: { retryable: false, max_attempts: 1 }
          - name: bad
            handler: { callable: tasker.fail, initialization: { retryable: false, error_type: interop_failure } }
          - name: later
            handler: { callable: tasker.noop }
        """

    // MARK: - gRPC

    @Test("a Python grpcio client generated from Protos/ calls every RPC; reflection and health work")
    func pythonGRPCClient() async throws {
        try await withWorker { harness, worker, runtime in
            let address = try #require(worker.daemon.boundAddresses.grpc)
            let template = harness.template
            let run = try await Self.runPython(
                "grpc_client.py",
                [
                    address, "--template", template.namespaceName, template.name, template.version,
                ])
            let json = try Self.decode(run, "grpc_client.py")
            #expect(run.status == 0, "grpc_client.py failures: \(json["failures"].map(String.init(describing:)) ?? "?")")
            #expect(json["failures"] == [])
            #expect(json["target"] == .string(address))
            let calls = try #require(json["calls"])
            let publicID = worker.daemon.identity.publicID
            let namespace = template.namespaceName

            // The worker id: worker-<uuid>, this daemon's.
            #expect(publicID.hasPrefix("worker-") && UUID(uuidString: String(publicID.dropFirst(7))) != nil)

            // WorkerHealthService.
            let basic = try Self.ok(calls, "tasker.v1.WorkerHealthService/CheckHealth")
            #expect(basic.fieldNames == ["status", "timestamp", "worker_id"])
            #expect(basic["status"] == "healthy")
            #expect(basic["worker_id"] == .string(publicID))
            #expect(Self.isRecent(basic["timestamp"]))
            let live = try Self.ok(calls, "tasker.v1.WorkerHealthService/CheckLiveness")
            #expect(live["status"] == "alive" && live["worker_id"] == .string(publicID) && Self.isRecent(live["timestamp"]))

            let ready = try Self.ok(calls, "tasker.v1.WorkerHealthService/CheckReadiness")
            #expect(ready.fieldNames == ["checks", "status", "system_info", "timestamp", "worker_id"])
            #expect(ready["status"] == "ready" && ready["worker_id"] == .string(publicID) && Self.isRecent(ready["timestamp"]))
            #expect(ready["checks"]?.fieldNames == ["command_processor", "database", "queue_processing"])
            for name in ["database", "command_processor", "queue_processing"] {
                Self.expectHealthyCheck(ready["checks"]?[name], name)
            }
            Self.expectSystemInfo(ready["system_info"], namespace: namespace, runtime: runtime)

            let detailed = try Self.ok(calls, "tasker.v1.WorkerHealthService/CheckDetailedHealth")
            #expect(["healthy", "degraded"].contains(detailed["status"]?.stringValue ?? ""))
            #expect(detailed["worker_id"] == .string(publicID) && Self.isRecent(detailed["timestamp"]))
            #expect(
                detailed["checks"]?.fieldNames == [
                    "circuit_breakers", "command_processor", "database", "event_system",
                    "queue_processing", "step_processing",
                ])
            for name in ["database", "circuit_breakers", "step_processing"] {
                Self.expectHealthyCheck(detailed["checks"]?[name], name)
            }
            // Optional, present: all three fields, defaults included.
            let cache = detailed["distributed_cache"]
            #expect(cache?.fieldNames == ["enabled", "healthy", "provider"])
            #expect(cache?["enabled"] == false && cache?["provider"] == "noop" && cache?["healthy"]?.boolValue != nil)
            Self.expectSystemInfo(detailed["system_info"], namespace: namespace, runtime: runtime)

            // WorkerConfigService: the same message SwiftProtobuf makes of the REST body.
            let config = try Self.ok(calls, "tasker.v1.WorkerConfigService/GetConfig")
            #expect(config["worker_id"] == .string(runtime.configuration.worker.workerId))
            #expect(config["worker_type"] == .string(runtime.configuration.worker.workerType))
            #expect(config["metadata"]?["version"] == .string(TaskerWorkerVersion.current))
            #expect(Self.isRecent(config["metadata"]?["timestamp"]))
            #expect(config["auth"]?["jwt_issuer"] == "tasker-worker")
            #expect(config["auth"]?["api_key_header"] == "X-API-Key")
            #expect(config["auth"]?["allowed_algorithms"] == ["RS256"])
            #expect(config["auth"]?["enabled"] == false && config["auth"]?["api_key_count"] == 0)
            #expect(config["messaging"]?["backend"] == "pgmq")
            #expect(config["messaging"]?["queues"]?.arrayValue?.contains(.string(QueueNames.workerQueue(namespace: namespace))) == true)
            // Python's JSON read back by SwiftProtobuf: the message the Swift side sends.
            var pythonConfig = try Self.message(Tasker_V1_WorkerGetConfigResponse.self, config)
            var expectedConfig = Tasker_V1_WorkerGetConfigResponse(await WorkerConfigQueryService(runtime: runtime).config())
            pythonConfig.metadata.clearTimestamp()
            expectedConfig.metadata.clearTimestamp()
            #expect(pythonConfig == expectedConfig)

            // WorkerTemplateService.
            let list = try Self.ok(calls, "tasker.v1.WorkerTemplateService/ListTemplates")
            #expect(list["supported_namespaces"] == [.string(namespace)])
            #expect(list["template_count"] == "1")  // int64: a string in protobuf's JSON mapping
            #expect(list["cache_stats"] == nil)
            #expect(list["worker_capabilities"] == ["command_processing", "database_access", "message_queues", "ffi_integration"])
            #expect(
                try Self.message(Tasker_V1_WorkerTemplateListResponse.self, list)
                    == Tasker_V1_WorkerTemplateListResponse(
                        try await WorkerTemplateQueryService(runtime: runtime).list(includeCacheStats: false)))
            let withStats = try Self.ok(calls, "tasker.v1.WorkerTemplateService/ListTemplates+cache_stats")
            #expect(withStats["cache_stats"]?["supported_namespaces"] == [.string(namespace)])
            #expect(withStats["cache_stats"]?["total_cached"]?.stringValue.flatMap { Int($0) }.map { $0 >= 1 } == true)

            let got = try Self.ok(calls, "tasker.v1.WorkerTemplateService/GetTemplate")
            let resolved = try #require(got["template"])
            #expect(resolved["name"] == "interop_probe" && resolved["namespace"] == .string(namespace))
            #expect(resolved["version"] == "3.1.4" && resolved["description"] == "Called from Python")
            #expect(
                resolved["steps"] == [
                    ["name": "ok_a", "description": "First step", "retryable": true, "max_attempts": 4],
                    ["name": "ok_b", "retryable": false, "max_attempts": 1],
                    ["name": "bad", "retryable": true, "max_attempts": 3],  // the template defaults
                    ["name": "later", "retryable": true, "max_attempts": 3],
                ])
            #expect(got["handler_metadata"]?["handler_name"] == "interop_probe")
            #expect(got["handler_metadata"]?["namespace"] == .string(namespace))
            #expect(got["handler_metadata"]?["version"] == "3.1.4")
            #expect(got["cached"] == true)
            #expect(
                try Self.message(Tasker_V1_WorkerTemplateResponse.self, got)
                    == Tasker_V1_WorkerTemplateResponse(
                        try await WorkerTemplateQueryService(runtime: runtime).get(
                            namespace: namespace, name: template.name, version: template.version)))

            let missing = try #require(calls["tasker.v1.WorkerTemplateService/GetTemplate+missing"])
            #expect(missing["code"] == 5 && missing["code_name"] == "NOT_FOUND")
            #expect(missing["response"] == nil)

            // grpc.health.v1.Health/Check.
            let health = try #require(json["health"])
            for service in ["", "tasker.v1.WorkerHealthService", "tasker.v1.WorkerConfigService", "tasker.v1.WorkerTemplateService"] {
                #expect(health[service]?["code"] == 0 && health[service]?["status"] == "SERVING", "\(service)")
            }
            #expect(health["no.such.Service"]?["code"] == 5)

            // grpc.reflection.v1.
            let reflection = try #require(json["reflection"])
            #expect(reflection["code"] == 0 && reflection["responses"] == 3)
            let listed = Set(reflection["list_services"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            #expect(
                listed == [
                    "tasker.v1.WorkerHealthService", "tasker.v1.WorkerConfigService", "tasker.v1.WorkerTemplateService",
                    "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
                ])
            let symbol = try #require(reflection["file_containing_symbol"])
            #expect(symbol["service_file"] == "tasker/v1/worker.proto")
            let files = symbol["files"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(files.first == "tasker/v1/worker.proto")
            #expect(Set(files) == ["tasker/v1/worker.proto", "tasker/v1/config.proto", "google/protobuf/timestamp.proto"])
            #expect(
                symbol["methods"] == [
                    Self.method("CheckHealth", "WorkerHealthRequest", "WorkerBasicHealthResponse"),
                    Self.method("CheckLiveness", "WorkerLivenessRequest", "WorkerBasicHealthResponse"),
                    Self.method("CheckReadiness", "WorkerReadinessRequest", "WorkerReadinessResponse"),
                    Self.method("CheckDetailedHealth", "WorkerDetailedHealthRequest", "WorkerDetailedHealthResponse"),
                ])
            // Called with message classes built from the reflected descriptors alone.
            let dynamic = try #require(reflection["dynamic_check_health"])
            #expect(dynamic["code"] == 0)
            #expect(dynamic["response"]?["status"] == "healthy" && dynamic["response"]?["worker_id"] == .string(publicID))
            #expect(reflection["unknown_symbol"]?["error_code"] == 5)
        }
    }

    @Test("grpc_client.py fails when it cannot reach a server")
    func pythonGRPCClientFailsWithoutServer() async throws {
        // A port that was free a moment ago: nothing listens there.
        let port = try freeLoopbackPort()
        let run = try await Self.runPython(
            "grpc_client.py",
            [
                "127.0.0.1:\(port)", "--template", "ns", "name", "1.0.0", "--timeout", "1",
            ])
        #expect(run.status != 0)
        let json = try Self.decode(run, "grpc_client.py")
        #expect(json["failures"]?.arrayValue?.isEmpty == false)
    }

    // MARK: - Prometheus

    @Test("/metrics over the REST socket parses with prometheus_client, with this run's step counters")
    func prometheusClientParsesMetrics() async throws {
        try await withWorker { harness, worker, runtime in
            let namespace = harness.template.namespaceName
            let ns = ["namespace": namespace]

            // Before any step: the worker's families are there, this namespace's counters are not.
            let before = try await Self.parsedMetrics(worker)
            #expect(Self.sample(before, "tasker_steps_executions", "tasker_steps_executions_total", ns) == nil)
            #expect(Self.sample(before, "tasker_worker_queue_depth", "tasker_worker_queue_depth", ns) == .int(0))

            let task = try await harness.createTask(steps: ["ok_a", "ok_b", "bad", "later"])
            for step in ["ok_a", "ok_b", "bad"] { try await harness.enqueue(task, step) }
            try await harness.waitForState(task["ok_a"], ["enqueued_for_orchestration"])
            try await harness.waitForState(task["ok_b"], ["enqueued_for_orchestration"])
            try await harness.waitForState(task["bad"], ["enqueued_as_error_for_orchestration"])
            // One message left in the queue: claiming off, then enqueued.
            worker.daemon.setClaiming(false)
            try await harness.enqueue(task, "later")
            // Results are committed before the counters move; give them a moment.
            try await waitUntil {
                let text = await WorkerMetricsRoutes.prometheusText(runtime)
                return text.contains("tasker_steps_results_submitted_total{namespace=\"\(namespace)\"} 3")
            }

            let after = try await Self.parsedMetrics(worker)
            // Counters: the parser names the family without "_total"; the sample keeps it.
            for family in [
                "tasker_steps_executions", "tasker_steps_successes", "tasker_steps_failures",
                "tasker_steps_claimed", "tasker_steps_handler_errors", "tasker_steps_results_submitted",
            ] {
                #expect(after[family]?["type"] == "counter", "\(family)")
            }
            #expect(Self.sample(after, "tasker_steps_claimed", "tasker_steps_claimed_total", ns) == .int(3))
            #expect(Self.sample(after, "tasker_steps_executions", "tasker_steps_executions_total", ns) == .int(3))
            #expect(Self.sample(after, "tasker_steps_successes", "tasker_steps_successes_total", ns) == .int(2))
            #expect(
                Self.sample(
                    after, "tasker_steps_failures", "tasker_steps_failures_total",
                    ns.merging(["error_type": "handler_execution_failed"]) { $1 }) == .int(1))
            #expect(Self.samples(after, "tasker_steps_failures", namespace: namespace).count == 1)
            #expect(
                Self.sample(
                    after, "tasker_steps_handler_errors", "tasker_steps_handler_errors_total",
                    ns.merging(["error_type": "interop_failure", "retryable": "false"]) { $1 }) == .int(1))
            #expect(Self.sample(after, "tasker_steps_results_submitted", "tasker_steps_results_submitted_total", ns) == .int(3))

            // A histogram: buckets, sum and count per series.
            let claim = "tasker_step_claim_duration_seconds"
            #expect(after[claim]?["type"] == "histogram")
            #expect(Self.sample(after, claim, claim + "_count", ns) == .int(3))
            #expect(Self.sample(after, claim, claim + "_bucket", ns.merging(["le": "+Inf"]) { $1 }) == .int(3))
            #expect(Self.sample(after, claim, claim + "_sum", ns)?.doubleValue.map { $0 > 0 } == true)

            // Scrape-time gauges.
            #expect(after["tasker_worker_info"]?["type"] == "gauge")
            #expect(
                Self.sample(
                    after, "tasker_worker_info", "tasker_worker_info",
                    [
                        "version": TaskerWorkerVersion.current, "worker_id": runtime.identity.publicID,
                        "worker_type": "command_processor",
                    ]) == .int(1))
            #expect(after["tasker_worker_queue_depth"]?["type"] == "gauge")
            #expect(Self.sample(after, "tasker_worker_queue_depth", "tasker_worker_queue_depth", ns) == .int(1))
            #expect(after["tasker_worker_uptime_seconds"]?["type"] == "gauge")
            #expect(Self.sample(after, "tasker_worker_db_pool_max_connections", "tasker_worker_db_pool_max_connections", [:]) == .int(12))
        }
    }

    @Test("parse_metrics.py rejects text that is not Prometheus exposition format")
    func parseMetricsRejectsMalformedText() async throws {
        let good = try await Self.runPython(
            "parse_metrics.py", [],
            stdin: Data(
                """
                # HELP a_total A counter
                # TYPE a_total counter
                a_total{x="1"} 3

                """.utf8))
        #expect(good.status == 0)
        let parsed = try Self.decode(good, "parse_metrics.py")
        #expect(parsed == ["a": ["type": "counter", "documentation": "A counter", "samples": [["a_total", ["x": "1"], 3]]]])

        let bad = try await Self.runPython("parse_metrics.py", [], stdin: Data("a_total{x=\"1\" 3\n".utf8))
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("does not parse"))
    }
}
