#if DEBUG
import Foundation
import TaskerModel
@testable import TaskerTelemetry
import Tracing

/// A W3C `traceparent` as it arrives from anyone who can send a step message, a result message or an
/// HTTP request → `TraceParent(header:)`, the tracer's `extract`, and the `traceparent` key of a step
/// message. Contract:
/// - an accepted value has the version-00 shape: 55 bytes or, for a later version, longer with a `-`
///   at byte 55 and at most `TraceParent.maximumLength`; lowercase hex; no all-zero trace or span id;
///   version `ff` never; and it writes back (`header`) as the same ids and sampled flag, which parse
///   again to the same value;
/// - extracting it into a context gives exactly what parsing gives;
/// - as a step message's `traceparent` (a JSON string), the message decodes as without the key or
///   keeps the value only up to `StepMessage.maximumTraceParentLength` bytes, and encodes back stably.
public enum TraceParentCheck {
    public static func check(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        let parsed = TraceParent(header: text)
        if let parsed {
            let utf8 = Array(text.utf8)
            FuzzContract.require(utf8.count >= 55 && utf8.count <= TraceParent.maximumLength, "accepted \(utf8.count) bytes")
            FuzzContract.require(utf8.count == 55 || utf8[55] == UInt8(ascii: "-"), "accepted a longer value without a '-' at 55")
            FuzzContract.require(!text.hasPrefix("ff"), "accepted version ff")
            FuzzContract.require(parsed.traceID.high | parsed.traceID.low != 0, "accepted an all-zero trace id")
            FuzzContract.require(parsed.spanID.value != 0, "accepted an all-zero span id")
            FuzzContract.require(
                utf8[0..<55].allSatisfy { $0 == UInt8(ascii: "-") || (0x30...0x39).contains($0) || (0x61...0x66).contains($0) },
                "accepted a character that is not lowercase hex")
            let again = TraceParent(header: parsed.header)
            FuzzContract.require(again == parsed, "\(parsed.header) does not parse back to itself")
            FuzzContract.require(
                parsed.header.dropFirst(3).prefix(49) == text.dropFirst(3).prefix(49), "the ids did not survive: \(parsed.header)")
        }
        var context = ServiceContext.topLevel
        TaskerTracer(sampler: .always, sink: nil).extract(text, into: &context, using: ValueExtractor())
        FuzzContract.require(context.traceParent == parsed, "extract differs from parse")

        // As the key of a step message.
        let document: JSONValue = .object([
            "task_uuid": .string("0190d1c2-0000-7000-8000-000000000001"),
            "step_uuid": .string("0190d1c2-0000-7000-8000-000000000002"),
            "correlation_id": .string("0190d1c2-0000-7000-8000-000000000003"),
            "traceparent": .string(text),
        ])
        guard let message = try? document.decode(StepMessage.self) else {
            FuzzContract.require(false, "a step message with a string traceparent did not decode")
            return
        }
        let expected = text.utf8.count <= StepMessage.maximumTraceParentLength ? text : nil
        FuzzContract.require(message.traceparent == expected, "traceparent kept wrongly (\(text.utf8.count) bytes)")
        let encoded = try? JSONValue(encoding: message).decode(StepMessage.self)
        FuzzContract.require(encoded == message, "StepMessage with traceparent unstable")
        let written = try? JSONDecoder().decode(StepMessage.self, from: Data(message.jsonString().utf8))
        FuzzContract.require(written == message, "StepMessage.jsonString with traceparent does not read back")
    }
}

/// A carrier that is the `traceparent` value itself.
private struct ValueExtractor: Extractor {
    func extract(key: String, from carrier: String) -> String? { key == "traceparent" ? carrier : nil }
}
#endif
