import Synchronization
import Testing
import Tracing

@testable import TaskerTelemetry

@Suite("W3C trace context, sampling and the tracer")
struct TraceContextTests {
    static let ids = "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"

    @Test func aValidTraceParentParsesAndWritesBack() throws {
        let parsed = try #require(TraceParent(header: "00-\(Self.ids)-01"))
        #expect(parsed.traceID.hex == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(parsed.spanID.hex == "00f067aa0ba902b7")
        #expect(parsed.sampled)
        #expect(parsed.header == "00-\(Self.ids)-01")
        #expect(TraceParent(header: "00-\(Self.ids)-00")?.sampled == false)
        // A later version may carry more after a '-': its first fields are read.
        #expect(TraceParent(header: "01-\(Self.ids)-01-more")?.header == "00-\(Self.ids)-01")
    }

    @Test(arguments: [
        "", "00", "00-\(ids)-01-", "00-\(ids)-1", "ff-\(ids)-01", "00-\(ids.uppercased())-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "00_\(ids)-01", "0g-\(ids)-01",
        "01-\(ids)-01x", "01-\(ids)-01-" + String(repeating: "x", count: 600),
    ])
    func anInvalidTraceParentIsNone(_ header: String) {
        #expect(TraceParent(header: header) == nil, "\(header.prefix(80))")
    }

    @Test func samplingFollowsTheSamplerAndTheParent() {
        let low = TraceID(high: 1, low: 1)
        let high = TraceID(high: 1, low: .max)
        let sampledParent = TraceParent(traceID: low, spanID: SpanID(1), sampled: true)
        let unsampledParent = TraceParent(traceID: low, spanID: SpanID(1), sampled: false)
        #expect(TaskerTracer.decide(.always, parent: unsampledParent, traceID: low))
        #expect(!TaskerTracer.decide(.never, parent: sampledParent, traceID: low))
        #expect(TaskerTracer.decide(.parentBased(.never), parent: sampledParent, traceID: low))
        #expect(!TaskerTracer.decide(.parentBased(.always), parent: unsampledParent, traceID: low))
        #expect(TaskerTracer.decide(.parentBased(.always), parent: nil, traceID: low))
        // The ratio decides on the trace id: the same in every process.
        #expect(TaskerTracer.decide(.ratio(0.5), parent: nil, traceID: low))
        #expect(!TaskerTracer.decide(.ratio(0.5), parent: nil, traceID: high))
        #expect(!TaskerTracer.decide(.ratio(0), parent: nil, traceID: low))
        #expect(TaskerTracer.decide(.ratio(1), parent: nil, traceID: high))
    }

    @Test func spansNestCarryTheirTraceAndReachTheSinkOnlyWhenSampled() throws {
        let sink = CollectingSink()
        let tracer = TaskerTracer(sampler: .parentBased(.always), sink: sink)
        let root = tracer.startSpan(
            "root", context: .topLevel, ofKind: .server, at: DefaultTracerClock.now, function: "", file: "", line: 0)
        let child = tracer.startSpan(
            "child", context: root.context, ofKind: .internal, at: DefaultTracerClock.now, function: "", file: "", line: 0)
        #expect(child.traceID == root.traceID)
        #expect(child.parentSpanID == root.spanID)
        #expect(root.parentSpanID == nil)
        child.attributes["tasker.step_uuid"] = "x"
        child.recordError(TestFailure(), attributes: [:], at: DefaultTracerClock.now)
        child.end()
        child.end()  // once only
        root.end()
        let finished = sink.spans
        #expect(finished.map(\.name) == ["child", "root"])
        #expect(finished[0].status?.code == .error)
        #expect(finished[0].events.map(\.name) == ["exception"])

        // An unsampled parent from another process: the spans are made (ids to pass on), not recorded.
        var remote = ServiceContext.topLevel
        remote.traceParent = TraceParent(header: "00-\(Self.ids)-00")
        let quiet = tracer.startSpan(
            "quiet", context: remote, ofKind: .consumer, at: DefaultTracerClock.now, function: "", file: "", line: 0)
        #expect(quiet.traceID.hex == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(!quiet.isRecording)
        quiet.end()
        #expect(sink.spans.count == 2)
    }

    @Test func injectAndExtractCarryTraceparentOnly() throws {
        let tracer = TaskerTracer(sampler: .always, sink: nil)
        var context = ServiceContext.topLevel
        context.traceParent = TraceParent(header: "00-\(Self.ids)-01")
        var headers: [String: String] = [:]
        tracer.inject(context, into: &headers, using: DictionaryCarrier())
        #expect(headers == ["traceparent": "00-\(Self.ids)-01"])
        var extracted = ServiceContext.topLevel
        tracer.extract(headers, into: &extracted, using: DictionaryCarrier())
        #expect(extracted.traceParent == context.traceParent)
        var bad = ServiceContext.topLevel
        tracer.extract(["traceparent": "garbage"], into: &bad, using: DictionaryCarrier())
        #expect(bad.traceParent == nil)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String { "the handler failed" }
}

final class CollectingSink: SpanSink, Sendable {
    private let collected = Mutex<[FinishedSpan]>([])
    var spans: [FinishedSpan] { collected.withLock { $0 } }
    func accept(_ span: FinishedSpan) { collected.withLock { $0.append(span) } }
}

struct DictionaryCarrier: Extractor, Injector {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}
