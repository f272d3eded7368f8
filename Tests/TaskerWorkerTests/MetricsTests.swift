import Foundation
import Hummingbird
import HummingbirdTesting
import Metrics
import NIOFoundationEssentialsCompat
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The Prometheus backend (text format 0.0.4) and the worker's `/metrics` endpoints.
@Suite("Metrics", .timeLimit(.minutes(2)))
struct MetricsTests {
    // MARK: - Rendering

    @Test func countersRenderWithHelpTypeAndEscapedLabels() {
        let factory = PrometheusMetricsFactory()
        factory.setHelp("Requests served", for: "http.requests.total")
        let counter = Counter(label: "http.requests.total", dimensions: [("http.route", "/a\"b\\c\nd")], factory: factory)
        counter.increment(by: 2)
        Counter(label: "http.requests.total", dimensions: [("http.route", "/a\"b\\c\nd")], factory: factory).increment()
        let text = factory.render()
        #expect(
            text == """
                # HELP http_requests_total Requests served
                # TYPE http_requests_total counter
                http_requests_total{http_route="/a\\"b\\\\c\\nd"} 3

                """)
    }

    @Test func gaugesMetersAndFloatingCounters() {
        let factory = PrometheusMetricsFactory()
        let gauge = Gauge(label: "queue.size", dimensions: [("b", "2"), ("a", "1")], factory: factory)
        gauge.record(5)
        gauge.record(7.5)
        let meter = Meter(label: "active", factory: factory)
        meter.increment(by: 3)
        meter.decrement(by: 1)
        FloatingPointCounter(label: "bytes", factory: factory).increment(by: 1.25)
        let lines = Set(factory.render().split(separator: "\n").map(String.init))
        #expect(lines.contains("# TYPE queue_size gauge"))
        #expect(lines.contains(#"queue_size{a="1",b="2"} 7.5"#))
        #expect(lines.contains("# TYPE active gauge"))
        #expect(lines.contains("active 2"))
        #expect(lines.contains("# TYPE bytes counter"))
        #expect(lines.contains("bytes 1.25"))
    }

    @Test func recordersAreHistogramsWithCumulativeBuckets() {
        let factory = PrometheusMetricsFactory()
        factory.setBuckets([5, 1, 2], for: "payload.size")
        let recorder = Recorder(label: "payload.size", dimensions: [("kind", "x")], factory: factory)
        for value in [0.5, 1, 3, 10] { recorder.record(value) }
        let text = factory.render()
        #expect(
            text == """
                # HELP payload_size payload_size
                # TYPE payload_size histogram
                payload_size_bucket{kind="x",le="1"} 2
                payload_size_bucket{kind="x",le="2"} 2
                payload_size_bucket{kind="x",le="5"} 3
                payload_size_bucket{kind="x",le="+Inf"} 4
                payload_size_sum{kind="x"} 14.5
                payload_size_count{kind="x"} 4

                """)
    }

    @Test func timersAreHistogramsInSeconds() throws {
        let factory = PrometheusMetricsFactory()
        Metrics.Timer(label: "step.duration", factory: factory).recordNanoseconds(1_500_000_000)
        Metrics.Timer(label: "step.duration", factory: factory).recordMilliseconds(20)
        let samples = Self.parse(factory.render())
        #expect(samples["step_duration_seconds_bucket{le=\"0.025\"}"] == 1)
        #expect(samples["step_duration_seconds_bucket{le=\"1\"}"] == 1)
        #expect(samples["step_duration_seconds_bucket{le=\"2.5\"}"] == 2)
        #expect(samples["step_duration_seconds_bucket{le=\"+Inf\"}"] == 2)
        #expect(samples["step_duration_seconds_count"] == 2)
        #expect(abs(try #require(samples["step_duration_seconds_sum"]) - 1.52) < 1e-9)
        #expect(factory.render().contains("# TYPE step_duration_seconds histogram"))
    }

    @Test func destroyRemovesTheSeriesAndConflictingKindsGetTheirOwnName() {
        let factory = PrometheusMetricsFactory()
        let counter = Counter(label: "9lives.count", factory: factory)
        counter.increment()
        Gauge(label: "9lives.count", factory: factory).record(4)
        let text = factory.render()
        #expect(text.contains("# TYPE _9lives_count counter\n_9lives_count 1\n"))
        #expect(text.contains("# TYPE _9lives_count_gauge gauge\n_9lives_count_gauge 4\n"))
        counter.destroy()
        #expect(!factory.render().contains("_9lives_count 1"))
        #expect(factory.render().contains("_9lives_count_gauge 4"))
    }

    @Test func namesEscapingAndNumbers() {
        #expect(PrometheusText.metricName("tasker.steps.claimed.total") == "tasker_steps_claimed_total")
        #expect(PrometheusText.metricName("a-b:c d") == "a_b:c_d")
        #expect(PrometheusText.labelName("http.request.method") == "http_request_method")
        #expect(PrometheusText.labelName("a:b") == "a_b")
        #expect(PrometheusText.escapeLabelValue("x\"y\\z\nw") == #"x\"y\\z\nw"#)
        #expect(PrometheusText.escapeHelp("a\\b\nc") == #"a\\b\nc"#)
        #expect(PrometheusText.format(3) == "3")
        #expect(PrometheusText.format(0.25) == "0.25")
        #expect(PrometheusText.format(.infinity) == "+Inf")
        #expect(PrometheusText.format(-.infinity) == "-Inf")
        #expect(PrometheusText.format(.nan) == "NaN")
        #expect(QueueNames.namespace(ofWorkerQueue: "worker_payments_queue") == "payments")
        #expect(QueueNames.namespace(ofWorkerQueue: "other") == "other")
    }

    @Test func bootstrapIsIdempotent() {
        let first = WorkerMetrics.bootstrap()
        let second = WorkerMetrics.bootstrap()
        #expect(first === second)
        #expect(first === WorkerMetrics.shared)
        #expect(WorkerMetrics.isBootstrapped)
        // Libraries using the global system (Hummingbird's MetricsMiddleware) land in the shared
        // factory, with their OTel-style dimension names sanitised.
        if MetricsSystem.factory is PrometheusMetricsFactory {
            Counter(label: "hb.requests", dimensions: [("http.request.method", "GET")]).increment()
            #expect(WorkerMetrics.shared.render().contains(#"hb_requests{http_request_method="GET"}"#))
        }
    }

    /// `/metrics` and `/metrics/worker` are computed from one count: a step event recorded once
    /// shows in the Prometheus counter families and in the statistics snapshot alike.
    @Test func oneCountFeedsPrometheusAndWorkerStatistics() throws {
        let statistics = WorkerStatistics()
        StepMetrics.stale(namespace: "a", in: statistics)
        StepMetrics.stale(namespace: "b", in: statistics)
        StepMetrics.stale(namespace: "b", in: statistics)
        StepMetrics.failure(namespace: "a", .claimFailed, in: statistics)
        StepMetrics.failure(namespace: "a", .databaseError, in: statistics)
        StepMetrics.notificationsDropped(3, in: statistics)
        StepMetrics.domainEvent(.fast, published: true, in: statistics)
        StepMetrics.domainEventInvalid(.durable, in: statistics)

        let snapshot = statistics.snapshot
        #expect(snapshot.staleMessages == 3)
        #expect(snapshot.claimsLost == 1)
        #expect(snapshot.notificationsDropped == 3)
        #expect(snapshot.domainEventsPublished == 1)
        #expect(snapshot.domainEventsInvalid == 1)
        #expect(snapshot.claimed == 0)

        let text = PrometheusText.render(statistics.prometheusFamilies)
        try Self.checkWellFormed(text)
        let s = Self.parse(text)
        #expect(s[#"tasker_steps_stale_messages_total{namespace="a"}"#] == 1)
        #expect(s[#"tasker_steps_stale_messages_total{namespace="b"}"#] == 2)
        #expect(s[#"tasker_steps_failures_total{error_type="claim_failed",namespace="a"}"#] == 1)
        #expect(s[#"tasker_steps_failures_total{error_type="database_error",namespace="a"}"#] == 1)
        #expect(s["tasker_worker_notifications_dropped_total"] == 3)
        #expect(s[#"tasker_domain_events_published_total{delivery_mode="fast"}"#] == 1)
        #expect(s[#"tasker_domain_events_invalid_total{delivery_mode="durable"}"#] == 1)
        #expect(text.contains("# HELP tasker_steps_stale_messages_total Messages for steps already past enqueued, archived\n"))
        #expect(text.contains("# TYPE tasker_steps_stale_messages_total counter\n"))
        #expect(!text.contains("tasker_steps_claimed_total"), "a counter never counted has no series")
        // Families sorted by name, as the swift-metrics backend renders its own.
        let families = statistics.prometheusFamilies.map(\.name)
        #expect(families == families.sorted())
    }

    // MARK: - A real worker

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
                Self.parse(await WorkerMetricsRoutes.prometheusText(runtime))[
                    "tasker_steps_results_submitted_total{namespace=\"\(namespace)\"}"] == 3
                    && runtime.domainEvents.routing.router.totalRouted == 1
            }

            let router = Router()
            router.addWorkerMetricsRoutes(runtime: runtime)
            let app = Application(router: router)
            try await app.test(.router) { client in
                try await client.execute(uri: "/metrics", method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType] == "text/plain; version=0.0.4; charset=utf-8")
                    let text = String(buffer: response.body)
                    try Self.checkWellFormed(text)
                    let s = Self.parse(text)
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

    // MARK: - Helpers

    /// `series → value` for every sample line (`name{labels}` exactly as rendered).
    static func parse(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " ") else { continue }
            let value = line[line.index(after: space)...]
            samples[String(line[..<space])] = value == "+Inf" ? .infinity : Double(value)
        }
        return samples
    }

    /// Every family has HELP then TYPE before its samples, each name once, every sample belongs
    /// to the family it follows.
    static func checkWellFormed(_ text: String) throws {
        var seen: Set<String> = []
        var current: (name: String, kind: String)?
        var pendingHelp: String?
        for line in text.split(separator: "\n").map(String.init) {
            if line.hasPrefix("# HELP ") {
                pendingHelp = String(line.dropFirst(7).split(separator: " ", maxSplits: 1)[0])
            } else if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ")
                let name = String(parts[0])
                #expect(pendingHelp == name, "TYPE without HELP: \(line)")
                #expect(!seen.contains(name), "family twice: \(name)")
                #expect(["counter", "gauge", "histogram", "untyped", "summary"].contains(String(parts[1])))
                seen.insert(name)
                current = (name, String(parts[1]))
            } else {
                let current = try #require(current, "sample before any TYPE: \(line)")
                let sampleName = String(line.prefix { $0 != "{" && $0 != " " })
                let allowed =
                    current.kind == "histogram"
                    ? [current.name + "_bucket", current.name + "_sum", current.name + "_count"] : [current.name]
                #expect(allowed.contains(sampleName), "sample \(sampleName) under \(current.name)")
                #expect(sampleName.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" })
            }
        }
    }
}
