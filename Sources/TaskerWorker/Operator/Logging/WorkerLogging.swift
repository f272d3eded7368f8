import Foundation
import Logging
import Synchronization
import TaskerHandlerSDK
import TaskerModel

/// Process-wide logging for the worker: `WorkerLogHandler` lines on standard error, human-readable
/// (`text`, the default) or one JSON object per line (`TASKER_LOG_FORMAT=json`), at
/// `TASKER_LOG_LEVEL` (default `info`; the configuration has no log-level key).
///
/// `bootstrap` is idempotent: the first call installs the handler with `LoggingSystem.bootstrap`
/// (allowed once per process); every call updates the level, format and global metadata, so the
/// CLI can bootstrap early and the launcher add `worker_id` once the identity exists.
///
/// A task may override the output, format, level and metadata for everything logged inside it
/// (`withOverride`), which lets several workers in one process (tests) tag and capture their lines.
package enum WorkerLogging {
    /// Line format.
    package enum Format: String, Sendable, CaseIterable {
        /// `2026-03-21T21:16:08.123Z info tasker.completion: step failed error_type=x step_uuid=…`
        case text
        /// `{"timestamp":…,"level":…,"label":…,"message":…,<metadata flattened>}`
        case json
    }

    /// Per-task settings (see `withOverride`); nil fields fall back to the global ones.
    struct Override: Sendable {
        package var output: LogOutput?
        package var format: Format?
        package var level: Logger.Level?
        package var metadata: Logger.Metadata

        package init(output: LogOutput? = nil, format: Format? = nil, level: Logger.Level? = nil, metadata: Logger.Metadata = [:]) {
            self.output = output
            self.format = format
            self.level = level
            self.metadata = metadata
        }
    }

    struct Settings: Sendable {
        var format: Format = .text
        var metadata: Logger.Metadata = [:]
        var output: LogOutput = .standardError
        var includeSourceLocation = false
    }

    private static let settings = Mutex(Settings())
    private static let levelStorage = Atomic<UInt8>(levelIndex(.info))
    private static let installed = Mutex(false)

    @TaskLocal static var taskOverride: Override?

    /// Installs `WorkerLogHandler` as the swift-log backend (first call only) and applies the
    /// settings: `level` (else `TASKER_LOG_LEVEL`, default `info`), `format` (else
    /// `TASKER_LOG_FORMAT`: `json` or `text`), `metadata` merged into the metadata of every line
    /// (e.g. `worker_id`), and `TASKER_LOG_SOURCE_LOCATION=true` to add file, function and line.
    /// Returns true if this call installed the handler.
    @discardableResult
    package static func bootstrap(
        level: Logger.Level? = nil, format: Format? = nil, metadata: Logger.Metadata = [:],
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Bool {
        let resolvedLevel = level ?? environment["TASKER_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0.lowercased()) } ?? .info
        levelStorage.store(levelIndex(resolvedLevel), ordering: .relaxed)
        settings.withLock { settings in
            settings.format = format ?? environment["TASKER_LOG_FORMAT"].flatMap { Format(rawValue: $0.lowercased()) } ?? .text
            settings.metadata.merge(metadata) { _, new in new }
            let source = environment["TASKER_LOG_SOURCE_LOCATION"]?.lowercased()
            settings.includeSourceLocation = source == "1" || source == "true"
        }
        return installed.withLock { installed in
            guard !installed else { return false }
            installed = true
            LoggingSystem.bootstrap { label in WorkerLogHandler(label: label) }
            return true
        }
    }

    /// Sets where lines go when no task override or handler names an output (default: standard error).
    package static func setOutput(_ output: LogOutput) {
        settings.withLock { $0.output = output }
    }

    /// Sets (or removes, with nil) one global metadata value carried by every line.
    static func setMetadata(_ key: String, _ value: Logger.Metadata.Value?) {
        settings.withLock { $0.metadata[key] = value }
    }

    /// The global level now.
    package static var level: Logger.Level {
        get { Logger.Level.allCases[Int(levelStorage.load(ordering: .relaxed))] }
        set { levelStorage.store(levelIndex(newValue), ordering: .relaxed) }
    }

    /// The global format now.
    package static var format: Format { settings.withLock { $0.format } }

    /// Runs `operation` with `override` for every line logged by its task and child tasks (metadata
    /// is merged over the enclosing override's).
    static func withOverride<T>(
        _ override: Override, isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> T
    ) async rethrows -> T {
        var merged = override
        if let outer = taskOverride {
            merged.output = merged.output ?? outer.output
            merged.format = merged.format ?? outer.format
            merged.level = merged.level ?? outer.level
            merged.metadata = outer.metadata.merging(override.metadata) { _, new in new }
        }
        return try await $taskOverride.withValue(merged, operation: operation, isolation: isolation)
    }

    static var effectiveLevel: Logger.Level { taskOverride?.level ?? level }

    static var current: (settings: Settings, override: Override?) { (settings.withLock { $0 }, taskOverride) }

    private static func levelIndex(_ level: Logger.Level) -> UInt8 {
        UInt8(Logger.Level.allCases.firstIndex(of: level) ?? 2)
    }
}

/// Where log lines go: a function receiving each complete line (with its trailing newline).
package struct LogOutput: Sendable {
    package let write: @Sendable (String) -> Void

    package init(write: @escaping @Sendable (String) -> Void) {
        self.write = write
    }

    /// Standard error, one `write` per line (lines from concurrent tasks do not interleave). A closed
    /// or broken stderr drops the line instead of trapping.
    package static let standardError = LogOutput { line in
        try? FileHandle.standardError.write(contentsOf: Data(line.utf8))
    }
}

extension StepLogMetadata {
    /// For a step message (before the template step is known).
    package static func of(_ message: StepMessage, _ extra: Logger.Metadata = [:]) -> Logger.Metadata {
        of(taskUUID: message.taskUUID, stepUUID: message.stepUUID, correlationID: message.correlationID, extra)
    }

    /// For a claimed step.
    package static func of(_ step: ClaimedStep, _ extra: Logger.Metadata = [:]) -> Logger.Metadata {
        var metadata = of(step.message)
        metadata["step_name"] = "\(step.hydrated.stepName)"
        metadata["namespace"] = "\(step.hydrated.namespace)"
        metadata["handler"] = "\(step.definition?.handler.callable ?? step.hydrated.templateStepName)"
        metadata.merge(extra) { _, new in new }
        return metadata
    }
}
