import Foundation
import Hummingbird
import NIOCore
import TaskerHTTP
import TaskerHandlerSDK
import TaskerModel

/// The metrics endpoints of the REST server, mounted with `router.addWorkerMetricsRoutes(runtime:)`:
///
/// - `GET /metrics`: Prometheus text format 0.0.4 — the scrape-time values of `WorkerScrape`
///   (`tasker_worker_info`, uptime, pool, queue depth and oldest message age per namespace,
///   channel health), the worker's step counters, and every metric recorded through swift-metrics
///   (latency histograms, HTTP metrics). Content type `text/plain; version=0.0.4; charset=utf-8`:
///   upstream serves the same text as `text/html`; the issue asks for the right content type, which
///   Prometheus and its parsers expect, so we deliberately differ here.
/// - `GET /metrics/worker`: JSON `{metrics{name:{value,metric_type,labels,help}},timestamp,worker_id}`.
/// - `GET /metrics/events`: JSON `{router{…},in_process_bus{…},captured_at,worker_id}`.
///
/// As upstream's: `worker_id` is the public `worker-<uuid>` (as `/health`), timestamps end in `Z`,
/// the content type is `application/json`.
///
/// Metrics need no authentication (as upstream).
package enum WorkerMetricsRoutes {
    /// `/metrics/worker`'s body.
    package struct WorkerMetricsResponse: Codable, Sendable {
        package var metrics: [String: WorkerMetricValue]
        package var timestamp: String
        package var workerID: String

        enum CodingKeys: String, CodingKey {
            case metrics, timestamp
            case workerID = "worker_id"
        }
    }

    /// `/metrics/events`'s body (upstream `DomainEventStats`).
    struct DomainEventStatsResponse: Codable, Sendable {
        package var router: DomainEventRouting.Router
        var inProcessBus: DomainEventRouting.InProcessBus
        var capturedAt: String
        package var workerID: String

        enum CodingKeys: String, CodingKey {
            case router
            case inProcessBus = "in_process_bus"
            case capturedAt = "captured_at"
            case workerID = "worker_id"
        }
    }

    /// The full `/metrics` text for `runtime`: scrape-time families, then the recorded ones sorted by
    /// name — the worker's step counters (`WorkerStatistics.counters`, the same counts as
    /// `/metrics/worker`) and what swift-metrics recorded (latency histograms, HTTP metrics).
    static func prometheusText(
        _ runtime: WorkerRuntime,
        factory: PrometheusMetricsFactory = WorkerMetrics.shared
    ) async -> String {
        let scraped = await WorkerScrape.collect(runtime).families
        let names = Set(scraped.map(\.name))
        let recorded = (factory.snapshot() + runtime.statistics.prometheusFamilies).sorted { $0.name < $1.name }
        return PrometheusText.render(scraped + recorded.filter { !names.contains($0.name) })
    }

    /// `/metrics/worker`'s body for `runtime`.
    package static func workerMetrics(_ runtime: WorkerRuntime) async -> WorkerMetricsResponse {
        let scrape = await WorkerScrape.collect(runtime)
        return WorkerMetricsResponse(
            metrics: scrape.jsonMetrics, timestamp: ResultTimestamp.string(Date()),
            workerID: runtime.identity.publicID)
    }

    /// `/metrics/events`'s body for `runtime`.
    static func domainEventStats(_ runtime: WorkerRuntime) async -> DomainEventStatsResponse {
        let subscribers = await runtime.domainEvents.subscriberCount
        let routing = runtime.statistics.domainEventRouting(subscribers: subscribers)
        return DomainEventStatsResponse(
            router: routing.router, inProcessBus: routing.inProcessBus,
            capturedAt: ResultTimestamp.string(Date()), workerID: runtime.identity.publicID)
    }

    static func json(_ value: some Encodable) -> Response {
        let data = (try? APIJSON.encode(value, sortedKeys: true)) ?? Data("{}".utf8)
        return Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}

extension Router {
    /// Mounts `GET /metrics`, `/metrics/worker` and `/metrics/events` for `runtime` (see
    /// `WorkerMetricsRoutes`), and bootstraps the process-wide metrics backend (idempotent) so
    /// that middleware using the global `MetricsSystem` lands in the same `/metrics` output.
    func addWorkerMetricsRoutes(runtime: WorkerRuntime) {
        WorkerMetrics.bootstrap()
        get("/metrics") { _, _ -> Response in
            let text = await WorkerMetricsRoutes.prometheusText(runtime)
            return Response(
                status: .ok, headers: [.contentType: PrometheusText.contentType],
                body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
        }
        get("/metrics/worker") { _, _ -> Response in
            WorkerMetricsRoutes.json(await WorkerMetricsRoutes.workerMetrics(runtime))
        }
        get("/metrics/events") { _, _ -> Response in
            WorkerMetricsRoutes.json(await WorkerMetricsRoutes.domainEventStats(runtime))
        }
    }
}
