import Foundation
import TOMLKit
import TaskerStepModel

/// Finds, reads, merges and validates the worker's TOML configuration.
///
/// File selection (as tasker-core):
/// - `TASKER_CONFIG_PATH` set: that single, pre-merged file (with `[common]` and `[worker]`).
/// - otherwise `<root>/base/common.toml`, `<root>/base/<context>.toml`, then the overlays
///   `<root>/environments/$TASKER_ENV/{common,<context>}.toml` that exist (`TASKER_ENV` defaults to
///   `development`); the context is `worker` (the worker) or `orchestration` (`tasker-dev orchestrate`).
///   `<root>` is `configRoot`, else `$WORKSPACE_PATH/config/tasker`, else `config/tasker` when the
///   working directory has one, else the `config/tasker` of the checkout the running executable was
///   built in (``executablesCheckoutRoot``: so `tasker-dev submit` works pasted into any directory),
///   else `config/tasker`.
///
/// Pipeline per file: parse → drop unknown keys (warning) and wrong types (error) → expand `${VAR}` /
/// `${VAR:-default}` (see `EnvironmentSubstitution`) → deep-merge over the built-in defaults, remembering
/// which file set each key. Then every range/format rule is checked on the merged tree, all errors are
/// collected, and only a clean tree is decoded (TOMLKit) into `TaskerConfiguration`.
public struct ConfigurationLoader: Sendable {
    /// The environment variables consulted (`TASKER_CONFIG_PATH`, `TASKER_ENV`, substitution variables).
    public let environment: [String: String]
    /// The directory holding `base/` and `environments/`.
    public let configRoot: String
    /// The files read per directory, in merge order: `common` and the process's own context.
    public let contexts: [String]

    /// Creates a loader. `configRoot` defaults to `$WORKSPACE_PATH/config/tasker`, else `config/tasker`
    /// relative to the working directory when it exists, else the executable's checkout's (see the
    /// type's documentation); `context` is `worker` or `orchestration`.
    public init(
        environment: [String: String] = ProcessInfo.processInfo.environment, configRoot: String? = nil,
        context: String = "worker"
    ) {
        self.environment = environment
        self.contexts = ["common", context]
        if let configRoot {
            self.configRoot = configRoot
        } else if let workspace = environment["WORKSPACE_PATH"], !workspace.isEmpty {
            self.configRoot = Self.join(workspace, "config/tasker")
        } else if !FileManager.default.fileExists(atPath: "config/tasker/base/common.toml"),
            let checkout = Self.executablesCheckoutRoot
        {
            self.configRoot = checkout
        } else {
            self.configRoot = "config/tasker"
        }
    }

    /// `config/tasker` of the checkout whose `.build` holds the running executable (e.g.
    /// `<checkout>/.build/x86_64-unknown-linux-gnu/debug/tasker-dev`), or nil: only for an executable
    /// under a `.build` directory, only a directory that also holds `Package.swift`, and only a tree that
    /// no other user can write (an installed binary never reads a configuration someone else planted
    /// above it).
    public static let executablesCheckoutRoot: String? = {
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
            let build = executable.range(of: "/.build/")
        else { return nil }
        let checkout = String(executable[..<build.lowerBound])
        let root = checkout + "/config/tasker"
        guard FileManager.default.fileExists(atPath: checkout + "/Package.swift"),
            FileManager.default.fileExists(atPath: root + "/base/common.toml")
        else { return nil }
        for path in [checkout, checkout + "/config", root, root + "/base"] {
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue, mode & 0o022 == 0
            else { return nil }
        }
        return root
    }()

    /// The allowed values of `TASKER_ENV`.
    public static let environments = ["test", "development", "production"]

    /// `TASKER_ENV`, or `development` when unset or empty.
    public var environmentName: String {
        guard let name = environment["TASKER_ENV"], !name.isEmpty else { return "development" }
        return name
    }

    /// The single file named by `TASKER_CONFIG_PATH`, if set and non-empty.
    public var configPathOverride: String? {
        guard let path = environment["TASKER_CONFIG_PATH"], !path.isEmpty else { return nil }
        return path
    }

    /// The files `load()` reads, in merge order.
    public func sourceFiles() throws(ConfigurationLoadError) -> [String] {
        if let configPathOverride { return [configPathOverride] }
        let name = environmentName
        guard Self.environments.contains(name) else {
            throw ConfigurationLoadError(issues: [
                ConfigurationIssue(
                    file: nil, keyPath: nil, value: nil,
                    problem: "TASKER_ENV=\(ConfigValue.string(name).rendered) must be one of: "
                        + Self.environments.joined(separator: ", "))
            ])
        }
        let base = contexts.map { Self.join(configRoot, "base/\($0).toml") }
        let missing = base.filter { !FileManager.default.fileExists(atPath: $0) }
        guard missing.isEmpty else {
            throw ConfigurationLoadError(
                issues: missing.map {
                    ConfigurationIssue(
                        file: $0, keyPath: nil, value: nil,
                        problem:
                            "base configuration file not found (set TASKER_CONFIG_PATH, WORKSPACE_PATH or run from the repository root)")
                })
        }
        let overlays = contexts.map { Self.join(configRoot, "environments/\(name)/\($0).toml") }
        return base + overlays.filter { FileManager.default.fileExists(atPath: $0) }
    }

    /// Loads the configuration selected by the environment (see the type's documentation).
    public func load() throws(ConfigurationLoadError) -> LoadedConfiguration {
        try load(files: sourceFiles())
    }

    /// Loads one explicit file (a pre-merged file, or any subset of keys) over the built-in defaults.
    public func load(file: String) throws(ConfigurationLoadError) -> LoadedConfiguration {
        try load(files: [file])
    }

    /// Loads `files` in order over the built-in defaults; later files override earlier ones.
    public func load(files: [String]) throws(ConfigurationLoadError) -> LoadedConfiguration {
        var errors: [ConfigurationIssue] = []
        var warnings: [ConfigurationIssue] = []
        var merged = ConfigurationSchema.defaults
        var origin: [String: String] = [:]
        let substitution = EnvironmentSubstitution(environment: environment)

        for file in files {
            guard let tree = Self.parse(file: file, errors: &errors) else { continue }
            let conformed = ConfigurationChecker.conform(tree, file: file, errors: &errors, warnings: &warnings)
            let expanded = substitution.apply(to: conformed, file: file, path: "", errors: &errors, warnings: &warnings)
            expanded.forEachLeaf { path, _ in origin[path] = file }
            merged = merged.merged(with: expanded)
        }

        let reported = Set(errors.compactMap(\.keyPath))
        errors += ConfigurationChecker.validate(
            merged, source: { Self.origin(of: $0, in: origin) }, skipping: reported)
        guard errors.isEmpty else { throw ConfigurationLoadError(issues: errors, warnings: warnings) }

        let configuration: TaskerConfiguration
        do {
            configuration = try merged.decode(TaskerConfiguration.self)
        } catch {
            throw ConfigurationLoadError(
                issues: [Self.issue(decoding: error, origin: origin)], warnings: warnings)
        }
        return LoadedConfiguration(
            configuration: configuration, warnings: warnings, sources: files, environment: environmentName)
    }

    // MARK: - Helpers

    static func parse(file: String, errors: inout [ConfigurationIssue]) -> ConfigValue? {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            let reason =
                FileManager.default.fileExists(atPath: file) ? "cannot read file (\(error.localizedDescription))" : "file not found"
            errors.append(ConfigurationIssue(file: file, keyPath: nil, value: nil, problem: reason))
            return nil
        }
        do {
            return try ConfigValue.parse(toml: text)
        } catch let problem as TOMLPreflight.Problem {
            errors.append(
                ConfigurationIssue(
                    file: file, keyPath: nil, value: nil,
                    problem: "invalid TOML at line \(problem.line), column \(problem.column): \(problem.message)"))
        } catch let error as TOMLParseError {
            errors.append(
                ConfigurationIssue(
                    file: file, keyPath: nil, value: nil,
                    problem: "invalid TOML at line \(error.source.begin.line), column \(error.source.begin.column): \(error.description)"))
        } catch {
            errors.append(ConfigurationIssue(file: file, keyPath: nil, value: nil, problem: "invalid TOML: \(error)"))
        }
        return nil
    }

    /// The file that set `path` (or its closest enclosing array/table); `nil` for built-in defaults.
    static func origin(of path: String, in origin: [String: String]) -> String? {
        var current = Substring(path)
        while !current.isEmpty {
            if let file = origin[String(current)] { return file }
            guard let cut = current.lastIndex(where: { $0 == "." || $0 == "[" }) else { break }
            current = current[..<cut]
        }
        return nil
    }

    /// Decoding only runs on a tree that passed every check, so this is a safety net.
    static func issue(decoding error: any Error, origin: [String: String]) -> ConfigurationIssue {
        var path: [any CodingKey] = []
        switch error as? DecodingError {
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?, .keyNotFound(_, let context)?,
            .dataCorrupted(let context)?:
            path = context.codingPath
        default: break
        }
        let keyPath = path.map { $0.intValue.map { "[\($0)]" } ?? KeySpelling.snakeCase($0.stringValue) }
            .joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        return ConfigurationIssue(
            file: keyPath.isEmpty ? nil : Self.origin(of: keyPath, in: origin), keyPath: keyPath.isEmpty ? nil : keyPath,
            value: nil, problem: "cannot decode: \(error)")
    }

    static func join(_ directory: String, _ relative: String) -> String {
        directory.hasSuffix("/") ? directory + relative : directory + "/" + relative
    }
}
