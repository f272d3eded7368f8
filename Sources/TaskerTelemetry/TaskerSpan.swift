import Synchronization
import Tracing

/// Where the current span's trace position travels in a `ServiceContext` (task-local, and across
/// processes as `traceparent`).
private enum TraceParentKey: ServiceContextKey {
    typealias Value = TraceParent
    static var nameOverride: String? { "traceparent" }
}

extension ServiceContext {
    /// The trace and span a span started in this context is a child of; set by ``TaskerTracer`` for the
    /// span it starts, and by `extract` from a `traceparent` carried in.
    public var traceParent: TraceParent? {
        get { self[TraceParentKey.self] }
        set { self[TraceParentKey.self] = newValue }
    }
}

/// A span of ``TaskerTracer``: reference semantics (every copy the same span), its mutable state behind
/// a lock, exported once when it ends. A span that is not sampled records nothing and is not exported.
public final class TaskerSpan: Span, Sendable {
    public let context: ServiceContext
    public let kind: SpanKind
    public let traceID: TraceID
    public let spanID: SpanID
    public let parentSpanID: SpanID?
    public let startNanoseconds: UInt64
    private let sink: (any SpanSink)?
    private let limits: SpanLimits
    private let state: Mutex<State>

    private struct State {
        var name: String
        var attributes: SpanAttributes = [:]
        var events: [SpanEvent] = []
        var status: SpanStatus?
        var recording: Bool
    }

    init(
        name: String, context: ServiceContext, kind: SpanKind, traceID: TraceID, spanID: SpanID, parentSpanID: SpanID?,
        startNanoseconds: UInt64, sink: (any SpanSink)?, limits: SpanLimits = SpanLimits()
    ) {
        self.limits = limits
        self.context = context
        self.kind = kind
        self.traceID = traceID
        self.spanID = spanID
        self.parentSpanID = parentSpanID
        self.startNanoseconds = startNanoseconds
        self.sink = sink
        state = Mutex(State(name: name, recording: sink != nil))
    }

    public var isRecording: Bool { state.withLock { $0.recording } }

    public var operationName: String {
        get { state.withLock { $0.name } }
        set { state.withLock { if $0.recording { $0.name = newValue } } }
    }

    public var attributes: SpanAttributes {
        get { state.withLock { $0.attributes } }
        set { state.withLock { if $0.recording { $0.attributes = newValue } } }
    }

    public func setStatus(_ status: SpanStatus) {
        state.withLock { if $0.recording { $0.status = status } }
    }

    /// Events beyond `SpanLimits.eventCount` per span are not kept (a loop recording one per item must
    /// not grow a span without bound).
    public func addEvent(_ event: SpanEvent) {
        state.withLock { if $0.recording, $0.events.count < limits.eventCount { $0.events.append(event) } }
    }

    /// As OpenTelemetry's semantic conventions: an `exception` event with the error's type and
    /// message, and the span's status set to error.
    public func recordError(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> some TracerInstant) {
        var event = SpanEvent(name: "exception", at: instant(), attributes: attributes)
        event.attributes["exception.type"] = "\(type(of: error))"
        event.attributes["exception.message"] = "\(error)"
        addEvent(event)
        setStatus(SpanStatus(code: .error, message: "\(error)"))
    }

    /// Links are not exported by this tracer.
    public func addLink(_ link: SpanLink) {}

    public func end(at instant: @autoclosure () -> some TracerInstant) {
        let finished: State? = state.withLock { state in
            guard state.recording else { return nil }
            state.recording = false
            return state
        }
        guard let finished, let sink else { return }
        // Bounded when handed on: whatever a failure message or an HTTP header held, a span keeps at
        // most `SpanLimits` of it (the buffer counts spans, so each must be small).
        let events = finished.events.map { event in
            var bounded = event
            bounded.attributes = limits.bounded(event.attributes)
            return bounded
        }
        sink.accept(
            FinishedSpan(
                name: limits.cut(finished.name), kind: kind, traceID: traceID, spanID: spanID, parentSpanID: parentSpanID,
                startNanoseconds: startNanoseconds, endNanoseconds: instant().nanosecondsSinceEpoch,
                attributes: limits.bounded(finished.attributes), events: events,
                status: finished.status.map { SpanStatus(code: $0.code, message: $0.message.map(limits.cut)) }))
    }
}

/// An ended span, as exported.
public struct FinishedSpan: Sendable {
    public var name: String
    public var kind: SpanKind
    public var traceID: TraceID
    public var spanID: SpanID
    public var parentSpanID: SpanID?
    public var startNanoseconds: UInt64
    public var endNanoseconds: UInt64
    public var attributes: SpanAttributes
    public var events: [SpanEvent]
    public var status: SpanStatus?
}

/// Takes ended spans; never blocks (``SpanExporter`` queues or drops).
protocol SpanSink: Sendable {
    func accept(_ span: FinishedSpan)
}
