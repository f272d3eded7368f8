import Tracing

/// The tracer of our processes (swift-distributed-tracing's `Tracer`): W3C Trace Context ids, the
/// sampler of ``TelemetrySettings``, ended spans handed to a ``SpanExporter``. Propagation is
/// `traceparent` only (the `tracestate` of a carrier is not read or written).
///
/// Bootstrapped once per process by ``Telemetry/bootstrap(_:)``; components then use the global
/// `withSpan`/`startSpan` of swift-distributed-tracing, and the `ServiceContext` of a message or an HTTP
/// request (``ServiceContext/traceParent``).
public struct TaskerTracer: Tracer {
    public typealias Span = TaskerSpan

    let sampler: TelemetrySettings.Sampler
    let sink: (any SpanSink)?
    let limits: SpanLimits

    init(sampler: TelemetrySettings.Sampler, sink: (any SpanSink)?, limits: SpanLimits = SpanLimits()) {
        self.sampler = sampler
        self.sink = sink
        self.limits = limits
    }

    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> TaskerSpan {
        var context = context()
        let parent = context.traceParent
        let traceID = parent?.traceID ?? .random()
        let spanID = SpanID.random()
        let sampled = Self.decide(sampler, parent: parent, traceID: traceID)
        context.traceParent = TraceParent(traceID: traceID, spanID: spanID, sampled: sampled)
        return TaskerSpan(
            name: operationName, context: context, kind: kind, traceID: traceID, spanID: spanID,
            parentSpanID: parent?.spanID, startNanoseconds: instant().nanosecondsSinceEpoch, sink: sampled ? sink : nil,
            limits: limits)
    }

    /// Whether a span of `traceID` under `parent` is recorded.
    static func decide(_ sampler: TelemetrySettings.Sampler, parent: TraceParent?, traceID: TraceID) -> Bool {
        switch sampler {
        case .always: return true
        case .never: return false
        case .ratio(let ratio):
            // On the trace id's low 64 bits, so every process decides the same for one trace.
            if ratio >= 1 { return true }
            if ratio <= 0 { return false }
            return Double(traceID.low >> 11) < ratio * Double(UInt64(1) << 53)
        case .parentBased(let root):
            if let parent { return parent.sampled }
            return decide(root, parent: nil, traceID: traceID)
        }
    }

    public func forceFlush() {
        (sink as? SpanExporter)?.flushSoon()
    }

    public func extract<Carrier, Extract>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract: Extractor, Extract.Carrier == Carrier {
        guard let header = extractor.extract(key: "traceparent", from: carrier), let parent = TraceParent(header: header) else {
            return
        }
        context.traceParent = parent
    }

    public func inject<Carrier, Inject>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject: Injector, Inject.Carrier == Carrier {
        guard let parent = context.traceParent else { return }
        injector.inject(parent.header, forKey: "traceparent", into: &carrier)
    }
}
