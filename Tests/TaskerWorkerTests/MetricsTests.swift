import Foundation
import Hummingbird
import HummingbirdTesting
import Metrics
import NIOFoundationEssentialsCompat
import TaskerHTTP
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The Prometheus backend (text format 0.0.4) and the counts behind the worker's `/metrics` endpoints (the endpoints
/// after a real run: `MetricsEndpointTests` in TaskerSystemTests).
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
        let samples = PrometheusSamples.parse(factory.render())
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
        try PrometheusSamples.checkWellFormed(text)
        let s = PrometheusSamples.parse(text)
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

    /// The counts `/metrics/worker` alone showed once (batched and recovered claims and results,
    /// notified reads, refused deliveries, the execution time) and `/metrics/events`' routing figures
    /// are series of the same counters: recorded once, each shows in `/metrics`, in the snapshot
    /// (`/metrics/worker`, the C ABI's metrics) and in the routing figures alike.
    @Test func everyCountIsOneSeriesOfTheCounters() throws {
        let statistics = WorkerStatistics()
        StepMetrics.claimsBatched(4, in: statistics)
        StepMetrics.claimsRecovered(2, in: statistics)
        StepMetrics.claimRefusedForLease(in: statistics)
        StepMetrics.completionsBatched(3, in: statistics)
        StepMetrics.completionRecovered(in: statistics)
        StepMetrics.notifiedReads(5, in: statistics)
        StepMetrics.notifiedReads(in: statistics)
        StepMetrics.deliveryRefused(in: statistics)
        StepMetrics.executionTime(.milliseconds(1_500), in: statistics)
        StepMetrics.executionTime(.milliseconds(-3), in: statistics)
        StepMetrics.domainEvent(.durable, published: true, subscribers: 9, in: statistics)
        StepMetrics.domainEvent(.fast, published: true, subscribers: 2, in: statistics)
        StepMetrics.domainEvent(.broadcast, published: true, subscribers: 3, in: statistics)
        StepMetrics.domainEvent(.fast, published: false, subscribers: 2, in: statistics)
        StepMetrics.domainEvent(.durable, published: false, in: statistics)
        StepMetrics.domainEventInvalid(.broadcast, in: statistics)

        let snapshot = statistics.snapshot
        #expect(snapshot.claimsBatched == 4)
        #expect(snapshot.claimsRecovered == 2)
        #expect(snapshot.claimsRefusedForLease == 1)
        #expect(snapshot.completionsBatched == 3)
        #expect(snapshot.completionsRecovered == 1)
        #expect(snapshot.notifiedReads == 6)
        #expect(snapshot.deliveriesRefused == 1)
        #expect(snapshot.totalExecutionTimeMs == 1_500, "a negative elapsed time adds nothing")

        let s = PrometheusSamples.parse(PrometheusText.render(statistics.prometheusFamilies))
        #expect(s["tasker_steps_claims_batched_total"] == 4)
        #expect(s["tasker_steps_claims_recovered_total"] == 2)
        #expect(s["tasker_steps_claims_refused_for_lease_total"] == 1)
        #expect(s["tasker_steps_completions_batched_total"] == 3)
        #expect(s["tasker_steps_completions_recovered_total"] == 1)
        #expect(s["tasker_worker_notified_reads_total"] == 6)
        #expect(s["tasker_worker_deliveries_refused_total"] == 1)
        #expect(s["tasker_steps_execution_time_milliseconds_total"] == 1_500)
        #expect(s["tasker_domain_events_subscriber_deliveries_total"] == 5, "durable events reach no subscriber")

        let routing = statistics.domainEventRouting(subscribers: 7)
        #expect(
            routing.router
                == DomainEventRouting.Router(
                    totalRouted: 3, durableRouted: 1, fastRouted: 1, broadcastRouted: 1, fastDeliveryErrors: 1,
                    routingErrors: 2, schemaViolations: 1))
        #expect(routing.inProcessBus.totalEventsDispatched == 2)
        #expect(routing.inProcessBus.rustHandlerDispatches == 5)
        #expect(routing.inProcessBus.rustHandlerCount == 7)
        #expect(routing.inProcessBus.ffiChannelDispatches == 0)
    }
}
