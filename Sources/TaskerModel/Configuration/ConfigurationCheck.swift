import TaskerStepModel

/// `tasker-worker config check`: load the configuration and report it.
///
/// The CLI prints `output` (to stdout when `succeeded`, else to stderr) and exits with `exitCode`.
public struct ConfigurationCheckResult: Sendable, Equatable {
    /// The effective configuration as redacted TOML preceded by `#` comment lines (environment, sources,
    /// warnings); or the list of errors and warnings.
    public let output: String
    /// 0 when the configuration is valid, 1 otherwise.
    public let exitCode: Int32
    /// Whether the configuration is valid.
    public var succeeded: Bool { exitCode == 0 }
}

/// Runs the configuration check.
public enum ConfigurationCheck {
    /// Loads `file` when given (like `TASKER_CONFIG_PATH`), else what `loader.load()` selects, and renders
    /// the outcome.
    public static func run(file: String? = nil, loader: ConfigurationLoader = ConfigurationLoader()) -> ConfigurationCheckResult {
        do throws(ConfigurationLoadError) {
            let loaded: LoadedConfiguration
            if let file { loaded = try loader.load(file: file) } else { loaded = try loader.load() }
            var lines = [
                "# tasker-worker configuration: OK",
                "# environment: \(loaded.environment)",
                "# sources: \(loaded.sources.joined(separator: ", "))",
            ]
            lines += loaded.warnings.map { "# warning: \($0)" }
            return ConfigurationCheckResult(
                output: lines.joined(separator: "\n") + "\n\n" + loaded.configuration.renderRedacted() + "\n",
                exitCode: 0)
        } catch {
            var lines = ["tasker-worker configuration: \(error.issues.count) error\(error.issues.count == 1 ? "" : "s")"]
            lines += error.issues.map { "error: \($0)" }
            lines += error.warnings.map { "warning: \($0)" }
            return ConfigurationCheckResult(output: lines.joined(separator: "\n") + "\n", exitCode: 1)
        }
    }
}
