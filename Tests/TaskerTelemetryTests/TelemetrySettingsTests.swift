import Testing
import Tracing

@testable import TaskerTelemetry

@Suite("Telemetry settings, the span buffer and the OTLP bodies")
struct TelemetrySettingsTests {
    @Test func defaultsAreOffAndTheUsualOTelVariablesApply() throws {
        let off = try TelemetrySettings(environment: [:], defaultServiceName: "tasker-worker")
        #expect(!off.enabled)
        #expect(off.tracesEndpoint == "http://localhost:4318/v1/traces")
        #expect(off.serviceName == "tasker-worker")
        #expect(off.sampler == .parentBased(.always))
        #expect(off.encoding == .protobuf)
        let on = try TelemetrySettings(
            environment: [
                "TELEMETRY_ENABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
                "OTEL_SERVICE_NAME": "payments-worker", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
                "OTEL_TRACES_SAMPLER_ARG": "0.25", "OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "500",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
            ], defaultServiceName: "tasker-worker")
        #expect(on.enabled)
        #expect(on.tracesEndpoint == "http://collector:4318/v1/traces")
        #expect(on.serviceName == "payments-worker")
        #expect(on.sampler == .parentBased(.ratio(0.25)))
        #expect(on.maxQueueSize == 100)
        #expect(on.maxExportBatchSize == 100, "a batch is never larger than the queue")
        #expect(on.encoding == .json)
        let full = try TelemetrySettings(
            environment: ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://x/traces", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://y"],
            defaultServiceName: "s")
        #expect(full.tracesEndpoint == "https://x/traces")
    }

    @Test(arguments: [
        ("TELEMETRY_ENABLED", "maybe", "true or false"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318", "an http:// or https:// URL"),
        ("OTEL_TRACES_SAMPLER", "sometimes", "always_on, always_off"),
        ("OTEL_TRACES_SAMPLER_ARG", "1.5", "a number from 0 to 1"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "0", "an integer from 1 to 1000000"),
        ("OTEL_BSP_SCHEDULE_DELAY", "soon", "an integer from 1 to 600000"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "http/protobuf or http/json"),
        ("OTEL_SERVICE_NAME", "a\nb", "one line"),
    ])
    func anInvalidVariableIsNamed(_ variable: String, _ value: String, _ expected: String) {
        #expect {
            _ = try TelemetrySettings(environment: [variable: value], defaultServiceName: "s")
        } throws: { error in
            let error = error as? TelemetrySettingsError
            return error?.variable == variable && error?.description.contains(expected) == true
                && error?.description.hasPrefix("environment variable \(variable) has an invalid value") == true
        }
    }

    @Test func theBufferDropsWhenFullAndBatchesInOrder() {
        var buffer = SpanBuffer(capacity: 3, batchSize: 2)
        #expect(buffer.append(Self.span("a")) == (true, false))
        #expect(buffer.append(Self.span("b")) == (true, true))
        #expect(buffer.append(Self.span("c")) == (true, true))
        #expect(buffer.append(Self.span("d")) == (false, true))
        #expect(buffer.droppedFull == 1)
        #expect(buffer.takeBatch().map(\.name) == ["a", "b"])
        #expect(buffer.takeBatch().map(\.name) == ["c"])
        #expect(buffer.takeBatch().isEmpty)
        #expect(buffer.isEmpty)
    }

    @Test func theJSONBodyUsesOTLPsMapping() throws {
        var span = Self.span("tasker.step")
        span.parentSpanID = SpanID(0xff)
        span.attributes["tasker.attempt"] = 2
        span.status = SpanStatus(code: .error, message: "boom")
        let text = String(decoding: OTLPJSON.request([span], serviceName: "svc"), as: UTF8.self)
        #expect(text.contains(#""traceId":"0000000000000001000000000000000a""#))
        #expect(text.contains(#""spanId":"000000000000000b""#))
        #expect(text.contains(#""parentSpanId":"00000000000000ff""#))
        #expect(text.contains(#""kind":5"#))
        #expect(text.contains(#""startTimeUnixNano":"1000""#))
        #expect(text.contains(#"{"key":"tasker.attempt","value":{"intValue":"2"}}"#))
        #expect(text.contains(#""code":2"#))
        #expect(text.contains(#"{"key":"service.name","value":{"stringValue":"svc"}}"#))
    }

    @Test func theProtobufBodyStartsWithItsResourceSpans() {
        let body = OTLPProtobuf.request([Self.span("x")], serviceName: "svc")
        #expect(body.first == 0x0a, "field 1 (resource_spans), length-delimited")
        var writer = OTLPProtobuf.Writer()
        writer.varint(1, 300)
        #expect(writer.bytes == [0x08, 0xac, 0x02])
        writer = OTLPProtobuf.Writer()
        writer.fixed64(7, 1)
        #expect(writer.bytes == [0x39, 1, 0, 0, 0, 0, 0, 0, 0])
    }

    static func span(_ name: String) -> FinishedSpan {
        FinishedSpan(
            name: name, kind: .consumer, traceID: TraceID(high: 1, low: 10), spanID: SpanID(11), parentSpanID: nil,
            startNanoseconds: 1000, endNanoseconds: 2000, attributes: [:], events: [], status: nil)
    }
}
