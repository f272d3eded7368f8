import AsyncHTTPClient
import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization
import Tracing

/// Sends ended spans to an OTLP/HTTP collector (`TelemetrySettings.tracesEndpoint`, protobuf or JSON), a
/// `Service` of the process's group.
///
/// - **Never blocks a step**: `accept` appends to a bounded ``SpanBuffer`` under a lock and returns;
///   a full buffer drops the span and counts it.
/// - **Batches**: a batch is sent when `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` spans wait, else every
///   `OTEL_BSP_SCHEDULE_DELAY`.
/// - **Retries with backoff**: a request that gets no answer, 429, 502, 503 or 504 is sent again after
///   0.5, 1 and 2 s (three retries), each within `OTEL_EXPORTER_OTLP_TIMEOUT`; then its spans are dropped
///   and counted. Other answers (4xx) drop at once.
/// - **Counted**: `tasker_telemetry_spans_exported_total`, `tasker_telemetry_spans_dropped_total{reason=
///   queue_full|export_failed}`, `tasker_telemetry_export_requests_total{outcome}` (in `/metrics`).
/// - **Shutdown**: what is buffered is sent once more, without retries, each request within the export
///   timeout (while the process's group allows: a forced stop drops it). Runs again after a shutdown.
public final class SpanExporter: Service, SpanSink, Sendable {
    public let settings: TelemetrySettings
    private let buffer: Mutex<SpanBuffer>
    /// Wakes the running export loop (a fresh stream per `run`, so the exporter can run again after a
    /// shutdown: an embedded worker started twice in one process).
    private let wake = Mutex<AsyncStream<Void>.Continuation?>(nil)
    /// Set at graceful shutdown: no more retries or backoff sleeps.
    private let stopping = Mutex(false)
    private let counts = Mutex(Statistics())
    private let logger: Logger

    /// What the exporter did, since its start.
    public struct Statistics: Sendable, Equatable {
        public var exported = 0
        public var droppedQueueFull = 0
        public var droppedExportFailed = 0
        public var requests = 0
        public var failedRequests = 0
    }

    public init(settings: TelemetrySettings, logger: Logger = Logger(label: "tasker.telemetry")) {
        self.settings = settings
        self.logger = logger
        buffer = Mutex(SpanBuffer(capacity: settings.maxQueueSize, batchSize: settings.maxExportBatchSize))
    }

    public var statistics: Statistics {
        counts.withLock { $0 }
    }

    func accept(_ span: FinishedSpan) {
        let (accepted, batchReady) = buffer.withLock { $0.append(span) }
        if !accepted {
            counts.withLock { $0.droppedQueueFull += 1 }
            Counter(label: "tasker_telemetry_spans_dropped_total", dimensions: [("reason", "queue_full")]).increment()
        }
        if batchReady { flushSoon() }
    }

    /// Sends soon whatever waits (`Tracer.forceFlush`).
    public func flushSoon() {
        _ = wake.withLock { $0?.yield() }
    }

    public func run() async throws {
        // Its own requests are not traced: AsyncHTTPClient would otherwise make a span of each export
        // with the global tracer (this one), and export it, and so on. Every request is bounded as a
        // whole (a collector that sends a head and stalls its body is cut off at the read timeout), and
        // redirects are not followed.
        var configuration = HTTPClient.Configuration()
        configuration.tracing.tracer = nil
        let timeout = TimeAmount.milliseconds(Int64(settings.exportTimeoutMilliseconds))
        configuration.timeout = HTTPClient.Configuration.Timeout(connect: timeout, read: timeout)
        configuration.redirectConfiguration = .disallow
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.wake.withLock { $0 = wake }
        stopping.withLock { $0 = false }
        let delay = Duration.milliseconds(settings.scheduleDelayMilliseconds)
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: delay)
                wake.yield()
            }
        }
        await withGracefulShutdownHandler {
            for await _ in wakeups {
                await exportWaiting(client)
            }
        } onGracefulShutdown: {
            self.stopping.withLock { $0 = true }
            wake.finish()
        }
        ticker.cancel()
        self.wake.withLock { $0 = nil }
        // What is left, once, without retries (they would hold the shutdown).
        await exportWaiting(client)
        try? await client.shutdown()
    }

    /// Sends every waiting span, a batch at a time.
    private func exportWaiting(_ client: HTTPClient) async {
        while true {
            let batch = buffer.withLock { $0.takeBatch() }
            guard !batch.isEmpty else { return }
            await send(batch, client: client)
        }
    }

    private func send(_ batch: [FinishedSpan], client: HTTPClient) async {
        let body =
            settings.encoding == .protobuf
            ? OTLPProtobuf.request(batch, serviceName: settings.serviceName) : OTLPJSON.request(batch, serviceName: settings.serviceName)
        let backoff: [Duration] = [.milliseconds(500), .seconds(1), .seconds(2)]
        var attempt = 0
        var lastProblem = ""
        while true {
            counts.withLock { $0.requests += 1 }
            let outcome = await post(body, client: client)
            switch outcome {
            case .sent:
                counts.withLock { $0.exported += batch.count }
                Counter(label: "tasker_telemetry_spans_exported_total").increment(by: batch.count)
                Counter(label: "tasker_telemetry_export_requests_total", dimensions: [("outcome", "ok")]).increment()
                return
            case .retryable(let problem), .refused(let problem):
                counts.withLock { $0.failedRequests += 1 }
                Counter(label: "tasker_telemetry_export_requests_total", dimensions: [("outcome", "failed")]).increment()
                lastProblem = problem
                if case .retryable = outcome, attempt < backoff.count, !Task.isCancelled, !stopping.withLock({ $0 }) {
                    try? await Task.sleep(for: backoff[attempt])
                    attempt += 1
                    continue
                }
            }
            break
        }
        counts.withLock { $0.droppedExportFailed += batch.count }
        Counter(label: "tasker_telemetry_spans_dropped_total", dimensions: [("reason", "export_failed")]).increment(by: batch.count)
        logger.warning(
            "spans dropped: the trace collector did not take them",
            metadata: ["spans": "\(batch.count)", "endpoint": "\(settings.tracesEndpoint)", "problem": "\(lastProblem)"])
    }

    private enum Outcome {
        case sent
        case retryable(String)
        case refused(String)
    }

    private func post(_ body: [UInt8], client: HTTPClient) async -> Outcome {
        var request = HTTPClientRequest(url: settings.tracesEndpoint)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: settings.encoding == .protobuf ? "application/x-protobuf" : "application/json")
        request.body = .bytes(ByteBuffer(bytes: body))
        let prepared = request
        let timeout = Duration.milliseconds(settings.exportTimeoutMilliseconds)
        // One deadline for the whole exchange, head and body: AsyncHTTPClient's own deadline ends at
        // the response head, and a collector that answers a head and stalls its body would hold the
        // exporter forever. The request's task is cancelled at the deadline (AHC cancels the request).
        return await withTaskGroup(of: Outcome?.self) { group in
            group.addTask {
                do {
                    let response = try await client.execute(
                        prepared, timeout: .milliseconds(Int64(self.settings.exportTimeoutMilliseconds)))
                    // The collector's answer is read and discarded, at most 64 KiB of it.
                    _ = try await response.body.collect(upTo: 64 << 10)
                    switch response.status.code {
                    case 200..<300: return .sent
                    case 429, 502, 503, 504: return .retryable("HTTP \(response.status.code)")
                    default: return .refused("HTTP \(response.status.code)")
                    }
                } catch {
                    return .retryable("\(error)")
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .retryable("no complete answer within \(settings.exportTimeoutMilliseconds) ms")
        }
    }
}
