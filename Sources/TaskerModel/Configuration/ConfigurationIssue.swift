import TaskerStepModel

/// One problem found while loading configuration: an error (in `ConfigurationLoadError.issues`) or a
/// warning (in `LoadedConfiguration.warnings` / `ConfigurationLoadError.warnings`).
///
/// `description` reads like
/// `config/x.toml: worker.mpsc_channels.handler_dispatch.max_concurrent_handlers = 0: must be between 1 and 10000`.
public struct ConfigurationIssue: Sendable, Equatable, CustomStringConvertible {
    /// The file the offending value came from; `nil` for built-in defaults or process-level problems.
    public let file: String?
    /// Dotted TOML key path (`worker.web.bind_address`, `worker.web.auth.api_keys[0].key`); `nil` when the
    /// problem is not about one key (unreadable file, syntax error).
    public let keyPath: String?
    /// The offending value as written in TOML (secrets redacted); `nil` when there is none.
    public let value: String?
    /// What is wrong and, where it applies, what is allowed.
    public let problem: String

    /// Creates an issue.
    public init(file: String?, keyPath: String?, value: String?, problem: String) {
        self.file = file
        self.keyPath = keyPath
        self.value = value
        self.problem = problem
    }

    public var description: String {
        var parts: [String] = []
        if let file { parts.append(file) }
        switch (keyPath, value) {
        case let (key?, value?): parts.append("\(key) = \(value)")
        case let (key?, nil): parts.append(key)
        default: break
        }
        parts.append(problem)
        return parts.joined(separator: ": ")
    }
}

/// Loading failed. `issues` holds every error found (the loader does not stop at the first one).
public struct ConfigurationLoadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The errors, in file order.
    public let issues: [ConfigurationIssue]
    /// Warnings collected before loading failed (unknown keys and the like).
    public let warnings: [ConfigurationIssue]

    /// Creates an error.
    public init(issues: [ConfigurationIssue], warnings: [ConfigurationIssue] = []) {
        self.issues = issues
        self.warnings = warnings
    }

    public var description: String {
        let noun = issues.count == 1 ? "error" : "errors"
        return "invalid configuration (\(issues.count) \(noun)):\n"
            + issues.map { "  - \($0)" }.joined(separator: "\n")
    }
}

/// A successfully loaded, validated configuration and where it came from.
public struct LoadedConfiguration: Sendable {
    /// The effective configuration.
    public let configuration: TaskerConfiguration
    /// Non-fatal problems: unknown keys, ignored `${...}` references, deprecated key names.
    public let warnings: [ConfigurationIssue]
    /// The files read, in merge order (later files override earlier ones).
    public let sources: [String]
    /// `TASKER_ENV`, or `development` when unset.
    public let environment: String

    /// Creates a loaded configuration.
    public init(configuration: TaskerConfiguration, warnings: [ConfigurationIssue], sources: [String], environment: String) {
        self.configuration = configuration
        self.warnings = warnings
        self.sources = sources
        self.environment = environment
    }
}
