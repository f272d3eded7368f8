import Tracing

/// The OTLP/HTTP protobuf body of a batch of spans (`opentelemetry.proto.collector.trace.v1.
/// ExportTraceServiceRequest`, `application/x-protobuf`: OTLP's default encoding), written by hand:
/// the few messages it needs, with their field numbers from opentelemetry-proto's `trace.proto`,
/// `common.proto` and `resource.proto`.
enum OTLPProtobuf {
    static func request(_ spans: [FinishedSpan], serviceName: String) -> [UInt8] {
        var resource = Writer()
        resource.message(1, keyValue("service.name", .string(serviceName)))  // Resource.attributes
        var scope = Writer()
        scope.string(1, "tasker")  // InstrumentationScope.name
        scope.string(2, "1")  // .version
        var scopeSpans = Writer()
        scopeSpans.message(1, scope.bytes)  // ScopeSpans.scope
        for span in spans { scopeSpans.message(2, self.span(span)) }  // .spans
        var resourceSpans = Writer()
        resourceSpans.message(1, resource.bytes)  // ResourceSpans.resource
        resourceSpans.message(2, scopeSpans.bytes)  // .scope_spans
        var request = Writer()
        request.message(1, resourceSpans.bytes)  // ExportTraceServiceRequest.resource_spans
        return request.bytes
    }

    static func span(_ span: FinishedSpan) -> [UInt8] {
        var w = Writer()
        w.lengthDelimited(1, bigEndian(span.traceID.high) + bigEndian(span.traceID.low))  // trace_id
        w.lengthDelimited(2, bigEndian(span.spanID.value))  // span_id
        if let parent = span.parentSpanID { w.lengthDelimited(4, bigEndian(parent.value)) }  // parent_span_id
        w.string(5, span.name)  // name
        w.varint(6, UInt64(OTLPJSON.kind(span.kind)))  // kind
        w.fixed64(7, span.startNanoseconds)  // start_time_unix_nano
        w.fixed64(8, span.endNanoseconds)  // end_time_unix_nano
        span.attributes.forEach { key, value in w.message(9, keyValue(key, value)) }  // attributes
        for event in span.events {  // events
            var e = Writer()
            e.fixed64(1, event.nanosecondsSinceEpoch)
            e.string(2, event.name)
            event.attributes.forEach { key, value in e.message(3, keyValue(key, value)) }
            w.message(11, e.bytes)
        }
        if let status = span.status {  // status: message 2, code 3 (OK 1, ERROR 2)
            var s = Writer()
            if let message = status.message { s.string(2, message) }
            s.varint(3, status.code == .ok ? 1 : 2)
            w.message(15, s.bytes)
        }
        return w.bytes
    }

    static func keyValue(_ key: String, _ value: SpanAttribute) -> [UInt8] {
        var kv = Writer()
        kv.string(1, key)
        kv.message(2, anyValue(value))
        return kv.bytes
    }

    /// `AnyValue`: string 1, bool 2, int 3, double 4, array 5 (`ArrayValue.values` 1).
    static func anyValue(_ value: SpanAttribute) -> [UInt8] {
        var w = Writer()
        func array(_ values: [[UInt8]]) {
            var a = Writer()
            for v in values { a.message(1, v) }
            w.message(5, a.bytes)
        }
        func single(_ build: (inout Writer) -> Void) -> [UInt8] {
            var v = Writer()
            build(&v)
            return v.bytes
        }
        switch value {
        case .string(let s): w.string(1, s)
        case .bool(let b): w.varint(2, b ? 1 : 0)
        case .int32(let i): w.varint(3, UInt64(bitPattern: Int64(i)))
        case .int64(let i): w.varint(3, UInt64(bitPattern: i))
        case .double(let d): w.fixed64(4, d.bitPattern)
        case .stringArray(let a): array(a.map { s in single { $0.string(1, s) } })
        case .boolArray(let a): array(a.map { b in single { $0.varint(2, b ? 1 : 0) } })
        case .int32Array(let a): array(a.map { i in single { $0.varint(3, UInt64(bitPattern: Int64(i))) } })
        case .int64Array(let a): array(a.map { i in single { $0.varint(3, UInt64(bitPattern: i)) } })
        case .doubleArray(let a): array(a.map { d in single { $0.fixed64(4, d.bitPattern) } })
        default: w.string(1, "\(value)")
        }
        return w.bytes
    }

    static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> UInt64(56 - 8 * $0)) }
    }

    /// Protobuf's wire format, the parts used here: varint (0), fixed64 (1), length-delimited (2).
    struct Writer {
        var bytes: [UInt8] = []

        mutating func tag(_ field: Int, _ wireType: UInt64) {
            raw(UInt64(field) << 3 | wireType)
        }

        mutating func raw(_ value: UInt64) {
            var v = value
            while v >= 0x80 {
                bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
                v >>= 7
            }
            bytes.append(UInt8(v))
        }

        mutating func varint(_ field: Int, _ value: UInt64) {
            tag(field, 0)
            raw(value)
        }

        mutating func fixed64(_ field: Int, _ value: UInt64) {
            tag(field, 1)
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }

        mutating func lengthDelimited(_ field: Int, _ value: [UInt8]) {
            tag(field, 2)
            raw(UInt64(value.count))
            bytes.append(contentsOf: value)
        }

        mutating func string(_ field: Int, _ value: String) {
            lengthDelimited(field, Array(value.utf8))
        }

        mutating func message(_ field: Int, _ value: [UInt8]) {
            lengthDelimited(field, value)
        }
    }
}
