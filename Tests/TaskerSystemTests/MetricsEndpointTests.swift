import Foundation
import Hummingbird
import HummingbirdTesting
import Metrics
import NIOFoundationEssentialsCompat
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The worker's `/metrics` endpoints after a real run (the backend and the counts:
/// `MetricsTests` in TaskerWorkerTests).
@Suite("Metrics endpoints", .timeLimit(.minutes(2)))
struct MetricsEndpointTests {
    static let yaml = """
        name: metered
        namespace_name: NAMESPACE
        version: 1.0.0
        steps:
          - name: ok_a
            handler: { callable: tasker.noop }
            publishes_events:
              - name: metered.done
                description: x
                condition: success
                delivery_mode: broadcast
                schema: null
          - name: ok_b
            handler: { callable: tasker.noop }
          - name: bad
            handler: { callable: tasker.fail, initialization: { retryable: false, error_type: metered_failure } }
          - name: later_a
            handler: { callable: tasker.noop }
          - name: later_b
            handler: { callable: tasker.noop }
        """

    @Test func prometheusEndpointReflectsARealRun() async throws {
        // Histograms are process-wide: a namespace of its own keeps this test's series apart.
        let namespace = "metrics_\(UUID().uuidString.prefix(8).lowercased())"
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml.replacingOccurrences(of: "NAMESPACE", with: namespace))
            let worker = harness.startWorker(.withBuiltIns(), configuration: harness.configuration(mode: .hybrid))
            try await harness.waitForWorkersReady(1, mode: .hybrid)
            let task = try await harness.createTask(steps: ["ok_a", "ok_b", "bad", "later_a", "later_b"])
            for step in ["ok_a", "ok_b", "bad"] { try await harness.enqueue(task, step) }
            try await harness.waitForState(task["ok_a"], ["enqueued_for_orchestration"])
            try await harness.waitForState(task["ok_b"], ["enqueued_for_orchestration"])
            try await harness.waitForState(task["bad"], ["enqueued_as_error_for_orchestration"])
            // Two messages left in the queue: claiming off, then enqueued.
            worker.daemon.setClaiming(false)
            for step in ["later_a", "later_b"] { try await harness.enqueue(task, step) }
            let runtime = worker.daemon.runtime
            // Results are committed before the counters move past the last statement; give them a moment.
            try await waitUntil {
                PrometheusSamples.parse(await WorkerMetricsRoutes.prometheusText(runtime))[
                    "tasker_steps_results_submitted_total{namespace=\"\(namespace)\"}"] == 3
                    && runtime.statistics.domainEventRouting(subscribers: 0).router.totalRouted == 1
            }

            let router = Router()
            router.addWorkerMetricsRoutes(runtime: runtime)
            let app = Application(router: router)
            try await app.test(.router) { client in
                try await client.execute(uri: "/metrics", method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType] == "text/plain; version=0.0.4; charset=utf-8")
                    let text = String(buffer: response.body)
                    try PrometheusSamples.checkWellFormed(text)
                    let s = PrometheusSamples.parse(text)
                    let ns = "namespace=\"\(namespace)\""
                    #expect(s["tasker_steps_claimed_total{\(ns)}"] == 3)
                    #expect(s["tasker_steps_executions_total{\(ns)}"] == 3)
                    #expect(s["tasker_steps_successes_total{\(ns)}"] == 2)
                    #expect(s["tasker_steps_failures_total{error_type=\"handler_execution_failed\",\(ns)}"] == 1)
                    #expect(s["tasker_steps_handler_errors_total{error_type=\"metered_failure\",\(ns),retryable=\"false\"}"] == 1)
                    #expect(s["tasker_steps_results_submitted_total{\(ns)}"] == 3)
                    #expect(s["tasker_step_claim_duration_seconds_count{\(ns)}"] == 3)
                    #expect(s["tasker_step_end_to_end_duration_seconds_count{\(ns)}"] == 3)
                    #expect(s["tasker_step_end_to_end_duration_seconds_bucket{\(ns),le=\"+Inf\"}"] == 3)
                    #expect(s["tasker_step_result_submission_duration_seconds_count{\(ns)}"] == 3)
                    #expect(s["tasker_step_execution_duration_seconds_count{handler=\"tasker.noop\",\(ns)}"] == 2)
                    #expect(s["tasker_step_execution_duration_seconds_count{handler=\"tasker.fail\",\(ns)}"] == 1)
                    // The real queue name, worker_<ns>_queue, with the two messages left in it.
                    #expect(s["tasker_worker_queue_depth{\(ns)}"] == 2)
                    #expect((s["tasker_worker_queue_oldest_message_age_seconds{\(ns)}"] ?? -1) >= 0)
                    let info =
                        "tasker_worker_info{version=\"\(TaskerWorkerVersion.current)\",worker_id=\"\(runtime.identity.publicID)\",worker_type=\"command_processor\"}"
                    #expect(s[info] == 1)
                    #expect((s["tasker_worker_uptime_seconds"] ?? 0) > 0)
                    #expect((s["tasker_worker_db_pool_size"] ?? 0) >= 1)
                    #expect(s["tasker_worker_db_pool_max_connections"] == 12)
                    #expect(s["tasker_worker_channel_health{channel_name=\"worker_handler_permits\",component=\"worker\"}"] == 0)
                    #expect(s["tasker_worker_channel_health{channel_name=\"worker_dispatch_channel\",component=\"worker\"}"] == 0)
                    #expect(
                        s.keys.contains("tasker_worker_channel_health{channel_name=\"worker_completion_channel\",component=\"worker\"}"))
                    #expect(text.contains("# TYPE tasker_steps_claimed_total counter"))
                    // This worker's own counters (not process-wide): exactly this run's event.
                    #expect(s["tasker_domain_events_published_total{delivery_mode=\"broadcast\"}"] == 1)
                    #expect(text.contains("# TYPE tasker_step_claim_duration_seconds histogram"))
                }
                try await client.execute(uri: "/metrics/worker", method: .get) { response in
                    #expect(response.status == .ok)
                    let json = try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
                    // As upstream's: worker-<uuid> (as /health), a timestamp ending in Z, f64 values as floats.
                    #expect(json["worker_id"] as? String == runtime.identity.publicID)
                    #expect((json["timestamp"] as? String)?.hasSuffix("Z") == true)
                    #expect(response.headers[.contentType] == "application/json")
                    let raw = String(decoding: Data(buffer: response.body), as: UTF8.self)
                    let pool = try #require(raw.range(of: #""database_pool_size":"#)).upperBound
                    let value = try #require(raw[pool...].range(of: #""value":"#)).upperBound
                    #expect(raw[value...].prefix { $0 != "}" && $0 != "," }.contains("."), "\(raw[pool...].prefix(200))")
                    let metrics = try #require(json["metrics"] as? [String: [String: Any]])
                    #expect(metrics["queue_depth_\(namespace)"]?["value"] as? Double == 2)
                    #expect(metrics["queue_depth_\(namespace)"]?["labels"] as? [String: String] == ["namespace": namespace])
                    #expect(metrics["uptime_seconds"]?["metric_type"] as? String == "counter")
                    #expect(metrics["database_pool_size"]?["help"] is String)
                    #expect(metrics["steps_total_executed"]?["value"] as? Double == 3)
                    #expect(metrics["steps_total_failed"]?["value"] as? Double == 1)
                }
                try await client.execute(uri: "/metrics/events", method: .get) { response in
                    #expect(response.status == .ok)
                    let json = try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
                    #expect(json["worker_id"] as? String == runtime.identity.publicID)
                    #expect((json["captured_at"] as? String)?.hasSuffix("Z") == true)
                    let routerStats = try #require(json["router"] as? [String: Any])
                    #expect(routerStats["total_routed"] as? Int == 1)
                    #expect(routerStats["broadcast_routed"] as? Int == 1)
                    #expect(routerStats["durable_routed"] as? Int == 0)
                    #expect(routerStats["routing_errors"] as? Int == 0)
                    let bus = try #require(json["in_process_bus"] as? [String: Any])
                    #expect(bus["total_events_dispatched"] as? Int == 1)
                    #expect(bus["ffi_subscriber_count"] as? Int == 0)
                }
            }
            try await worker.stop()
        }
    }
}
