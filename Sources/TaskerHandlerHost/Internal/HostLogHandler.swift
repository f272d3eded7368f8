import Logging
import TaskerHandlerSDK

/// The host's and its handlers' log lines, written into the embedded worker's log stream
/// (`tasker_log`: the worker's format and destination), so one process logs one way.
struct HostLogHandler: LogHandler {
    let library: WorkerLibrary
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields: [String: JSONValue] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { _, new in new }) {
            fields[key] = .string("\(value)")
        }
        let level: Int32 =
            switch event.level {
            case .trace: 0
            case .debug: 1
            case .info, .notice: 2
            case .warning: 3
            case .error, .critical: 4
            }
        library.log(
            level: level, message: "\(event.message)", fieldsJSON: fields.isEmpty ? nil : try? JSONValue.object(fields).jsonString())
    }
}
