import TaskerModel
import Tracing

/// The OTLP/HTTP JSON body of a batch of spans (`ExportTraceServiceRequest` in protobuf's JSON mapping,
/// as the OTLP specification defines it: trace and span ids in lowercase hex, 64-bit integers as
/// decimal strings, enums as numbers).
enum OTLPJSON {
    static func request(_ spans: [FinishedSpan], serviceName: String) -> [UInt8] {
        let resource: JSONValue = .object([
            "attributes": .array([attribute("service.name", anyValue(.string(serviceName)))])
        ])
        let scope: JSONValue = .object(["name": .string("tasker"), "version": .string("1")])
        let body: JSONValue = .object([
            "resourceSpans": .array([
                .object([
                    "resource": resource,
                    "scopeSpans": .array([.object(["scope": scope, "spans": .array(spans.map(span))])]),
                ])
            ])
        ])
        var writer = JSONWriter(sortedKeys: true, escapeSlashes: false)
        // Every value above is finite (non-finite doubles are written as strings): the writer refuses none.
        try? writer.value(body)
        return Array(writer.text.utf8)
    }

    static func span(_ span: FinishedSpan) -> JSONValue {
        var members: [String: JSONValue] = [
            "traceId": .string(span.traceID.hex),
            "spanId": .string(span.spanID.hex),
            "name": .string(span.name),
            "kind": .int(kind(span.kind)),
            "startTimeUnixNano": .string(String(span.startNanoseconds)),
            "endTimeUnixNano": .string(String(span.endNanoseconds)),
            "attributes": attributes(span.attributes),
            "events": .array(
                span.events.map { event in
                    .object([
                        "timeUnixNano": .string(String(event.nanosecondsSinceEpoch)), "name": .string(event.name),
                        "attributes": attributes(event.attributes),
                    ])
                }),
        ]
        if let parent = span.parentSpanID { members["parentSpanId"] = .string(parent.hex) }
        if let status = span.status {
            var statusMembers: [String: JSONValue] = ["code": .int(status.code == .ok ? 1 : 2)]
            if let message = status.message { statusMembers["message"] = .string(message) }
            members["status"] = .object(statusMembers)
        }
        return .object(members)
    }

    /// OTLP's `SpanKind`: INTERNAL 1, SERVER 2, CLIENT 3, PRODUCER 4, CONSUMER 5.
    static func kind(_ kind: SpanKind) -> Int64 {
        switch kind {
        case .internal: 1
        case .server: 2
        case .client: 3
        case .producer: 4
        case .consumer: 5
        }
    }

    static func attributes(_ attributes: SpanAttributes) -> JSONValue {
        var list: [JSONValue] = []
        attributes.forEach { key, value in list.append(attribute(key, anyValue(value))) }
        return .array(list)
    }

    static func attribute(_ key: String, _ value: JSONValue) -> JSONValue {
        .object(["key": .string(key), "value": value])
    }

    /// OTLP's `AnyValue` of a span attribute.
    static func anyValue(_ value: SpanAttribute) -> JSONValue {
        func array(_ values: [JSONValue]) -> JSONValue { .object(["arrayValue": .object(["values": .array(values)])]) }
        func double(_ d: Double) -> JSONValue {
            d.isFinite ? .object(["doubleValue": .double(d)]) : .object(["stringValue": .string("\(d)")])
        }
        switch value {
        case .int32(let i): return .object(["intValue": .string(String(i))])
        case .int64(let i): return .object(["intValue": .string(String(i))])
        case .double(let d): return double(d)
        case .bool(let b): return .object(["boolValue": .bool(b)])
        case .string(let s): return .object(["stringValue": .string(s)])
        case .int32Array(let a): return array(a.map { .object(["intValue": .string(String($0))]) })
        case .int64Array(let a): return array(a.map { .object(["intValue": .string(String($0))]) })
        case .doubleArray(let a): return array(a.map(double))
        case .boolArray(let a): return array(a.map { .object(["boolValue": .bool($0)]) })
        case .stringArray(let a): return array(a.map { .object(["stringValue": .string($0)]) })
        default: return .object(["stringValue": .string("\(value)")])
        }
    }
}
