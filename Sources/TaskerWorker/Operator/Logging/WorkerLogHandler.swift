import Foundation
import Logging
import TaskerHandlerSDK
import TaskerModel
import TaskerTelemetry

/// The worker's swift-log handler (see `WorkerLogging`): text or JSON lines, with the global and
/// per-task metadata of `WorkerLogging` under the logger's own and the call's metadata.
package struct WorkerLogHandler: LogHandler {
    package let label: String
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    private var levelOverride: Logger.Level?
    private let output: LogOutput?
    private let format: WorkerLogging.Format?

    /// A handler following `WorkerLogging`'s settings; `output`, `format` and `level` fix them for
    /// this handler only (tests).
    package init(
        label: String, output: LogOutput? = nil, format: WorkerLogging.Format? = nil,
        level: Logger.Level? = nil, metadataProvider: Logger.MetadataProvider? = nil
    ) {
        self.label = label
        self.output = output
        self.format = format
        self.levelOverride = level
        self.metadataProvider = metadataProvider
    }

    package var logLevel: Logger.Level {
        get { levelOverride ?? WorkerLogging.effectiveLevel }
        set { levelOverride = newValue }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        let (settings, override) = WorkerLogging.current
        var merged = settings.metadata
        if let override { merged.merge(override.metadata) { _, new in new } }
        merged.merge(metadata) { _, new in new }
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        // The current span (issue #30): a line logged inside a step's handler, or any traced work,
        // carries `trace_id` and `span_id`.
        if let trace = Telemetry.current {
            merged["trace_id"] = "\(trace.traceID.hex)"
            merged["span_id"] = "\(trace.spanID.hex)"
        }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        if let error = event.error, merged["error"] == nil { merged["error"] = "\(error)" }
        let record = LogRecord(
            timestamp: Date(), level: event.level, label: label, message: LogRecord.clipped(event.message.description),
            metadata: merged.mapValues { LogRecord.clipped(LogRecord.lowercasingUUID($0)) },
            source: settings.includeSourceLocation ? (event.source, event.file, event.function, event.line) : nil)
        let line =
            switch format ?? override?.format ?? settings.format {
            case .text: record.text()
            case .json: record.json()
            }
        (output ?? override?.output ?? settings.output).write(line)
    }
}

/// One log line before formatting.
struct LogRecord {
    var timestamp: Date
    var level: Logger.Level
    var label: String
    var message: String
    var metadata: Logger.Metadata
    var source: (module: String, file: String, function: String, line: UInt)?

    /// The most characters of one message or metadata value written: logged values often come from
    /// hostile input (a 100,000-character template name in a task request), and one line must stay
    /// readable and bounded. Longer text is cut and says how much was left out.
    static let maximumValueLength = 2048

    static func clipped(_ text: String) -> String {
        guard text.count > maximumValueLength else { return text }
        return String(text.prefix(maximumValueLength)) + "… (\(text.count - maximumValueLength) more characters)"
    }

    static func clipped(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(clipped(text))
        case .stringConvertible(let convertible): .string(clipped(convertible.description))
        case .array(let values): .array(values.prefix(64).map(clipped))
        case .dictionary(let nested): .dictionary(nested.mapValues(clipped))
        }
    }

    /// A value that is exactly one UUID, in lower case: Swift writes `UUID` in upper case, the
    /// command line, PostgreSQL, the REST API and upstream write lower case, and a uuid copied from
    /// one into a search of the other must match (`task_uuid=01a21b33-…` everywhere).
    static func lowercasingUUID(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): isUUID(text) ? .string(text.lowercased()) : value
        case .stringConvertible(let convertible):
            isUUID(convertible.description) ? .string(convertible.description.lowercased()) : value
        case .array, .dictionary: value
        }
    }

    /// 8-4-4-4-12 hexadecimal digits.
    static func isUUID(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard utf8.count == 36 else { return false }
        for (index, byte) in utf8.enumerated() {
            switch index {
            case 8, 13, 18, 23: if byte != UInt8(ascii: "-") { return false }
            default:
                let isHex = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
                if !isHex { return false }
            }
        }
        return true
    }

    static let reservedKeys: Set<String> = ["timestamp", "level", "label", "message", "source", "file", "function", "line"]

    /// `<timestamp> <level> <label>: <message> key=value …` (keys sorted), always one line: control
    /// characters (C0 including `\n`, `\r`, `\t`; DEL; C1; U+2028/2029) in the label, message, keys and
    /// values are written as escapes (`\n`, `\r`, `\t`, `\u{85}`), so logged values cannot forge lines.
    func text() -> String {
        var line =
            "\(Self.iso8601(timestamp)) \(level) \(StringEscaping.escapingControls(label)): "
            + StringEscaping.escapingControls(message)
        for key in metadata.keys.sorted() {
            line += " \(StringEscaping.escapingControls(key))=\(Self.plain(metadata[key]!))"
        }
        if let source { line += " (\(StringEscaping.escapingControls(source.file)):\(source.line))" }
        return line + "\n"
    }

    /// One JSON object: timestamp, level, label, message, optional source location, then every
    /// metadata key at the top level (nested dictionaries flattened with dots; a key that collides
    /// with a fixed field gets a `metadata.` prefix).
    func json() -> String {
        var fields: [(String, String)] = [
            ("timestamp", StringEscaping.jsonQuoted(Self.iso8601(timestamp))),
            ("level", StringEscaping.jsonQuoted(level.rawValue)),
            ("label", StringEscaping.jsonQuoted(label)), ("message", StringEscaping.jsonQuoted(message)),
        ]
        if let source {
            fields += [
                ("source", StringEscaping.jsonQuoted(source.module)), ("file", StringEscaping.jsonQuoted(source.file)),
                ("function", StringEscaping.jsonQuoted(source.function)), ("line", "\(source.line)"),
            ]
        }
        var flat: [(String, String)] = []
        Self.flatten(metadata, prefix: "", into: &flat)
        for (key, value) in flat.sorted(by: { $0.0 < $1.0 }) {
            fields.append((Self.reservedKeys.contains(key) ? "metadata.\(key)" : key, value))
        }
        return "{" + fields.map { "\(StringEscaping.jsonQuoted($0.0)):\($0.1)" }.joined(separator: ",") + "}\n"
    }

    private static func flatten(_ metadata: Logger.Metadata, prefix: String, into out: inout [(String, String)]) {
        for (key, value) in metadata {
            switch value {
            case .dictionary(let nested): flatten(nested, prefix: "\(prefix)\(key).", into: &out)
            default: out.append(("\(prefix)\(key)", jsonValue(value)))
            }
        }
    }

    private static func jsonValue(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text): return StringEscaping.jsonQuoted(text)
        case .stringConvertible(let convertible): return StringEscaping.jsonQuoted(convertible.description)
        case .array(let values): return "[" + values.map(jsonValue).joined(separator: ",") + "]"
        case .dictionary(let nested):
            return "{" + nested.keys.sorted().map { "\(StringEscaping.jsonQuoted($0)):\(jsonValue(nested[$0]!))" }.joined(separator: ",")
                + "}"
        }
    }

    private static func plain(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text):
            // Quoted (JSON escapes) when it has a blank or control character; `jsonQuoted` escapes U+2028/9 too.
            let needsQuotes = text.contains(" ") || text.unicodeScalars.contains(where: StringEscaping.isControl)
            return needsQuotes ? StringEscaping.jsonQuoted(text) : text
        case .stringConvertible(let convertible): return plain(.string(convertible.description))
        case .array(let values): return "[" + values.map(plain).joined(separator: ",") + "]"
        case .dictionary(let nested):
            return "{" + nested.keys.sorted().map { "\(StringEscaping.escapingControls($0))=\(plain(nested[$0]!))" }.joined(separator: ",")
                + "}"
        }
    }

    /// `2026-03-21T21:16:08.123Z` (UTC, milliseconds).
    static func iso8601(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        var seconds = time_t(interval.rounded(.down))
        let millis = min(999, Int((interval - Double(seconds)) * 1000))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }
}
