import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing
import Tracing

@testable import TaskerTelemetry

/// The exporter against a real HTTP collector on a loopback port (Hummingbird, in this process): spans
/// arrive in batches; 503 answers are retried; a collector that answers a head and stalls its body is
/// cut off at the export timeout; after a shutdown the exporter runs again (an embedded worker started
/// twice in one process); the buffer's drops are counted.
@Suite("Span exporter against a live collector", .timeLimit(.minutes(2)))
struct SpanExporterTests {
    /// A collector: answers each POST with the next planned status (200 once the plan is used up), or
    /// stalls its body when told; records the body sizes of the requests it answered 200.
    final class Collector: Sendable {
        let plan: Mutex<[HTTPResponse.Status]>
        let stall = Atomic<Bool>(false)
        let received = Mutex<[Int]>([])
        let requests = Atomic<Int>(0)

        init(plan: [HTTPResponse.Status] = []) {
            self.plan = Mutex(plan)
        }

        func router() -> Router<BasicRequestContext> {
            let router = Router()
            router.post("/v1/traces") { request, _ -> Response in
                self.requests.wrappingAdd(1, ordering: .relaxed)
                let body = try await request.body.collect(upTo: 16 << 20)
                if self.stall.load(ordering: .relaxed) {
                    // A head, then a body that never comes.
                    return Response(
                        status: .ok, headers: [.contentLength: "100"],
                        body: ResponseBody { _ in try await Task.sleep(for: .seconds(3600)) })
                }
                let status = self.plan.withLock { $0.isEmpty ? .ok : $0.removeFirst() }
                if status == .ok { self.received.withLock { $0.append(body.readableBytes) } }
                return Response(status: status)
            }
            return router
        }
    }

    /// Runs `body` with a collector listening on a free loopback port (its traces URL).
    static func withCollector(_ collector: Collector, _ body: @Sendable (String) async throws -> Void) async throws {
        let port = Mutex<Int?>(nil)
        let app = Application(
            router: collector.router(), configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in port.withLock { $0 = channel.localAddress?.port } },
            logger: Logger(label: "collector", factory: { _ in SwiftLogNoOpLogHandler() }))
        try await withThrowingTaskGroup(of: Void.self) { group in
            let service = ServiceGroup(services: [app], logger: Logger(label: "g", factory: { _ in SwiftLogNoOpLogHandler() }))
            group.addTask { try await service.run() }
            var bound: Int?
            for _ in 0..<500 where bound == nil {
                bound = port.withLock { $0 }
                if bound == nil { try await Task.sleep(for: .milliseconds(10)) }
            }
            let url = "http://127.0.0.1:\(try #require(bound))/v1/traces"
            defer { group.cancelAll() }
            try await body(url)
            await service.triggerGracefulShutdown()
        }
    }

    static func settings(_ url: String, timeoutMs: Int = 10000, queue: Int = 2048) -> TelemetrySettings {
        var settings = TelemetrySettings(serviceName: "test")
        settings.enabled = true
        settings.tracesEndpoint = url
        settings.scheduleDelayMilliseconds = 50
        settings.exportTimeoutMilliseconds = timeoutMs
        settings.maxQueueSize = queue
        settings.maxExportBatchSize = min(512, queue)
        return settings
    }

    /// Runs `exporter` until `done` holds (checked every 20 ms, at most `seconds`), then shuts it down.
    static func run(_ exporter: SpanExporter, seconds: Double = 30, until done: @escaping @Sendable () -> Bool) async throws {
        let group = ServiceGroup(services: [exporter], logger: Logger(label: "e", factory: { _ in SwiftLogNoOpLogHandler() }))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int(seconds * 1000)))
            while !done(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    static func span(_ name: String) -> FinishedSpan {
        FinishedSpan(
            name: name, kind: .internal, traceID: .random(), spanID: .random(), parentSpanID: nil, startNanoseconds: 1,
            endNanoseconds: 2, attributes: ["k": "v"], events: [], status: nil)
    }

    @Test func spansArriveAndTheExporterRunsAgainAfterAShutdown() async throws {
        let collector = Collector()
        try await Self.withCollector(collector) { url in
            let exporter = SpanExporter(settings: Self.settings(url))
            for i in 0..<10 { exporter.accept(Self.span("a\(i)")) }
            try await Self.run(exporter) { exporter.statistics.exported == 10 }
            #expect(exporter.statistics.exported == 10)
            // Started again (a second embedded worker in the same process): it serves, and exports.
            for i in 0..<5 { exporter.accept(Self.span("b\(i)")) }
            try await Self.run(exporter) { exporter.statistics.exported == 15 }
            #expect(exporter.statistics.exported == 15)
            #expect(exporter.statistics.droppedExportFailed == 0)
        }
    }

    @Test func unavailableAnswersAreRetriedAndARefusalDrops() async throws {
        let collector = Collector(plan: [.serviceUnavailable, .serviceUnavailable, .ok, .badRequest])
        try await Self.withCollector(collector) { url in
            let exporter = SpanExporter(settings: Self.settings(url))
            for i in 0..<3 { exporter.accept(Self.span("r\(i)")) }
            try await Self.run(exporter) { exporter.statistics.exported == 3 }
            #expect(exporter.statistics.exported == 3)
            #expect(exporter.statistics.failedRequests == 2)
            // The plan's next answer is 400: not retried, the batch is dropped and counted.
            exporter.accept(Self.span("x"))
            try await Self.run(exporter) { exporter.statistics.droppedExportFailed == 1 }
            #expect(exporter.statistics.droppedExportFailed == 1)
            #expect(exporter.statistics.exported == 3)
        }
    }

    @Test func aStalledAnswerIsCutOffAndAFullBufferDrops() async throws {
        let collector = Collector()
        collector.stall.store(true, ordering: .relaxed)
        try await Self.withCollector(collector) { url in
            let exporter = SpanExporter(settings: Self.settings(url, timeoutMs: 300, queue: 4))
            for i in 0..<6 { exporter.accept(Self.span("s\(i)")) }
            #expect(exporter.statistics.droppedQueueFull == 2, "a full buffer drops, never waits")
            // Every attempt stalls; each is cut off at the timeout, retried, then the batch dropped.
            try await Self.run(exporter, seconds: 60) { exporter.statistics.droppedExportFailed == 4 }
            #expect(exporter.statistics.droppedExportFailed == 4)
            #expect(collector.requests.load(ordering: .relaxed) == 4, "the first try and three retries")
        }
    }

    @Test func aSpanKeepsAtMostItsLimits() throws {
        var limits = SpanLimits()
        limits.valueLength = 16
        limits.attributeCount = 2
        #expect(limits.cut("short") == "short")
        #expect(limits.cut(String(repeating: "a", count: 40)).utf8.count == 16)
        // Never inside a UTF-8 sequence: 15 ASCII bytes and a 3-byte character do not fit in 16.
        #expect(limits.cut(String(repeating: "a", count: 15) + "€€") == String(repeating: "a", count: 15))
        let bounded = limits.bounded(["c": "x", "a": .string(String(repeating: "y", count: 100)), "b": 1])
        var keys: [String] = []
        bounded.forEach { key, _ in keys.append(key) }
        #expect(keys.sorted() == ["a", "b"])
        #expect(bounded["a"]?.toSpanAttribute() == .string(String(repeating: "y", count: 16)))
        let sink = CollectingSink()
        let tracer = TaskerTracer(sampler: .always, sink: sink, limits: limits)
        let span = tracer.startSpan("s", context: .topLevel, ofKind: .internal, at: DefaultTracerClock.now, function: "", file: "", line: 0)
        span.setStatus(SpanStatus(code: .error, message: String(repeating: "m", count: 1000)))
        for _ in 0..<500 { span.addEvent("e") }
        span.end()
        #expect(sink.spans[0].status?.message?.utf8.count == 16)
        #expect(sink.spans[0].events.count == 128)
    }
}
