import Foundation
import Logging

/// Process-wide logging: stderr lines at `TASKER_LOG_LEVEL` (default `info`).
enum LogSetup {
    static func bootstrap() {
        let name = ProcessInfo.processInfo.environment["TASKER_LOG_LEVEL"]?.lowercased() ?? "info"
        let level = Logger.Level(rawValue: name) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
