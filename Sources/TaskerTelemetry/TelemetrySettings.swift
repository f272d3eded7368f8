import Tracing

/// Trace export, configured as upstream's processes and the OpenTelemetry SDKs are: by environment.
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `TELEMETRY_ENABLED` | `true`/`1`: export spans (upstream's switch) | off |
/// | `OTEL_EXPORTER_OTLP_ENDPOINT` | OTLP/HTTP base URL; spans go to `<base>/v1/traces` | `http://localhost:4318` |
/// | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` | the full traces URL, used as is | – |
/// | `OTEL_EXPORTER_OTLP_PROTOCOL` (or `…_TRACES_PROTOCOL`) | `http/protobuf` or `http/json` (`grpc` is not offered) | `http/protobuf` |
/// | `OTEL_SERVICE_NAME` | `service.name` of every span | the process's (`tasker-worker`, `tasker-orchestration`) |
/// | `OTEL_TRACES_SAMPLER` | `always_on`, `always_off`, `traceidratio`, `parentbased_always_on`, `parentbased_always_off`, `parentbased_traceidratio` | `parentbased_always_on` |
/// | `OTEL_TRACES_SAMPLER_ARG` | the ratio, 0–1 | 1 |
/// | `OTEL_BSP_MAX_QUEUE_SIZE` | spans waiting for export at most; more are dropped and counted | 2048 |
/// | `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` | spans per request at most | 512 |
/// | `OTEL_BSP_SCHEDULE_DELAY` | ms between exports of a batch that is not full | 5000 |
/// | `OTEL_EXPORTER_OTLP_TIMEOUT` | ms per export request | 10000 |
/// | `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT` | a string attribute, event attribute or status message longer than this (bytes) is cut | 1024 |
/// | `OTEL_ATTRIBUTE_COUNT_LIMIT` | attributes kept per span or event | 128 |
///
/// Every value is checked; a bad one is an error naming the variable and what it must be.
public struct TelemetrySettings: Sendable, Equatable {
    public var enabled = false
    /// Where spans are POSTed (OTLP/HTTP, JSON encoding).
    public var tracesEndpoint = "http://localhost:4318/v1/traces"
    public var serviceName: String
    public var sampler = Sampler.parentBased(.always)
    /// OTLP/HTTP's body encoding.
    public var encoding = Encoding.protobuf
    public var maxQueueSize = 2048
    public var maxExportBatchSize = 512
    public var scheduleDelayMilliseconds = 5000
    public var exportTimeoutMilliseconds = 10000
    /// What one span may hold: its memory is bounded whatever an attribute or a failure message says.
    public var limits = SpanLimits()

    /// `http/protobuf` (`application/x-protobuf`, OTLP's default) or `http/json` (`application/json`).
    public enum Encoding: String, Sendable, Equatable {
        case protobuf = "http/protobuf"
        case json = "http/json"
    }

    /// Which traces are recorded and exported.
    public enum Sampler: Sendable, Equatable {
        case always
        case never
        /// A fraction of trace ids, decided on the trace id (so every process decides alike).
        case ratio(Double)
        /// The parent's decision when there is a parent, else `root`'s.
        indirect case parentBased(Sampler)
    }

    public init(serviceName: String) {
        self.serviceName = serviceName
    }

    /// The settings `environment` gives (`ProcessInfo.processInfo.environment`), `defaultServiceName`
    /// unless `OTEL_SERVICE_NAME` is set.
    public init(environment: [String: String], defaultServiceName: String) throws(TelemetrySettingsError) {
        self.init(serviceName: defaultServiceName)
        if let value = environment["TELEMETRY_ENABLED"] {
            switch value.lowercased() {
            case "true", "1", "yes", "on": enabled = true
            case "false", "0", "no", "off", "": enabled = false
            default: throw TelemetrySettingsError(variable: "TELEMETRY_ENABLED", value: value, expected: "true or false")
            }
        }
        if let value = environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], !value.isEmpty {
            tracesEndpoint = try Self.url(value, variable: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        } else if let value = environment["OTEL_EXPORTER_OTLP_ENDPOINT"], !value.isEmpty {
            var base = try Self.url(value, variable: "OTEL_EXPORTER_OTLP_ENDPOINT")
            while base.hasSuffix("/") { base.removeLast() }
            tracesEndpoint = base + "/v1/traces"
        }
        for variable in ["OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] {
            guard let value = environment[variable], !value.isEmpty else { continue }
            guard let parsed = Encoding(rawValue: value) else {
                throw TelemetrySettingsError(
                    variable: variable, value: value, expected: "http/protobuf or http/json (OTLP over gRPC is not offered)")
            }
            encoding = parsed
        }
        if let value = environment["OTEL_SERVICE_NAME"], !value.isEmpty {
            guard value.utf8.count <= 255, !value.contains(where: \.isNewline) else {
                throw TelemetrySettingsError(variable: "OTEL_SERVICE_NAME", value: value, expected: "one line of at most 255 bytes")
            }
            serviceName = value
        }
        var ratio = 1.0
        if let value = environment["OTEL_TRACES_SAMPLER_ARG"], !value.isEmpty {
            guard let parsed = Double(value), parsed >= 0, parsed <= 1 else {
                throw TelemetrySettingsError(variable: "OTEL_TRACES_SAMPLER_ARG", value: value, expected: "a number from 0 to 1")
            }
            ratio = parsed
        }
        if let value = environment["OTEL_TRACES_SAMPLER"], !value.isEmpty {
            switch value {
            case "always_on": sampler = .always
            case "always_off": sampler = .never
            case "traceidratio": sampler = .ratio(ratio)
            case "parentbased_always_on": sampler = .parentBased(.always)
            case "parentbased_always_off": sampler = .parentBased(.never)
            case "parentbased_traceidratio": sampler = .parentBased(.ratio(ratio))
            default:
                throw TelemetrySettingsError(
                    variable: "OTEL_TRACES_SAMPLER", value: value,
                    expected:
                        "always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio")
            }
        }
        maxQueueSize = try Self.integer(environment, "OTEL_BSP_MAX_QUEUE_SIZE", 1...1_000_000, default: maxQueueSize)
        maxExportBatchSize = try Self.integer(environment, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1...100_000, default: maxExportBatchSize)
        maxExportBatchSize = min(maxExportBatchSize, maxQueueSize)
        scheduleDelayMilliseconds = try Self.integer(
            environment, "OTEL_BSP_SCHEDULE_DELAY", 1...600_000, default: scheduleDelayMilliseconds)
        exportTimeoutMilliseconds = try Self.integer(
            environment, "OTEL_EXPORTER_OTLP_TIMEOUT", 1...600_000, default: exportTimeoutMilliseconds)
    }

    private static func url(_ value: String, variable: String) throws(TelemetrySettingsError) -> String {
        let lower = value.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), value.utf8.count <= 2048,
            !value.contains(where: { $0.isWhitespace })
        else {
            throw TelemetrySettingsError(variable: variable, value: value, expected: "an http:// or https:// URL")
        }
        return value
    }

    private static func integer(
        _ environment: [String: String], _ variable: String, _ range: ClosedRange<Int>, default value: Int
    ) throws(TelemetrySettingsError) -> Int {
        guard let text = environment[variable], !text.isEmpty else { return value }
        guard let parsed = Int(text), range.contains(parsed) else {
            throw TelemetrySettingsError(
                variable: variable, value: text, expected: "an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return parsed
    }
}

/// A telemetry variable has a value it cannot have.
public struct TelemetrySettingsError: Error, CustomStringConvertible, Sendable, Equatable {
    public let variable: String
    public let value: String
    public let expected: String

    public var description: String {
        "environment variable \(variable) has an invalid value \"\(value.prefix(200))\": must be \(expected)"
    }
}

/// The most one span keeps (OpenTelemetry's attribute limits, with bounds of ours as defaults).
public struct SpanLimits: Sendable, Equatable {
    /// Bytes of a string value (attribute, event attribute, status message) kept; longer ones are cut.
    public var valueLength = 1024
    /// Attributes kept per span and per event.
    public var attributeCount = 128
    /// Events kept per span.
    public var eventCount = 128

    public init() {}

    /// `attributes` within the limits: at most `attributeCount` (in key order), strings cut.
    func bounded(_ attributes: SpanAttributes) -> SpanAttributes {
        var kept: [(String, SpanAttribute)] = []
        attributes.forEach { key, value in kept.append((key, value)) }
        kept.sort { $0.0 < $1.0 }
        var out: SpanAttributes = [:]
        for (key, value) in kept.prefix(attributeCount) {
            switch value {
            case .string(let text): out[key] = SpanAttribute.string(cut(text))
            case .stringArray(let texts): out[key] = SpanAttribute.stringArray(texts.prefix(attributeCount).map(cut))
            default: out[key] = value as SpanAttribute
            }
        }
        return out
    }

    /// `text` cut to at most `valueLength` bytes, never inside a UTF-8 sequence.
    func cut(_ text: String) -> String {
        guard text.utf8.count > valueLength else { return text }
        var bytes = Array(text.utf8.prefix(valueLength))
        // The last sequence: its lead byte, and whether all its bytes made it in.
        var lead = bytes.count - 1
        while lead > 0, bytes[lead] & 0xC0 == 0x80 { lead -= 1 }
        let first = bytes[lead]
        let length = first < 0x80 ? 1 : first >= 0xF0 ? 4 : first >= 0xE0 ? 3 : 2
        if bytes.count - lead < length { bytes.removeSubrange(lead...) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
