import Foundation
import Logging
import TaskerHandlerSDK
import TaskerModel
import TaskerWorker

/// The `config_json` of `tasker_worker_bootstrap` (see the header): each key overrides the
/// environment variable the daemon's `run` command reads; unknown keys are refused.
struct BootstrapOptions: Sendable {
    static let keys: Set<String> = [
        "environment", "config_path", "database_url", "template_path", "web_bind_address", "grpc_bind_address",
        "log_level", "log_format",
    ]

    var environment: String?
    var configPath: String?
    var databaseURL: String?
    var templatePath: String?
    var webBindAddress: String?
    var grpcBindAddress: String?
    var logLevel: Logger.Level?
    var logFormat: WorkerLogging.Format?

    init(_ object: [String: JSONValue]) throws(FFIError) {
        if let unknown = object.keys.sorted().first(where: { !Self.keys.contains($0) }) {
            throw .invalid("config_json: unknown key \"\(unknown)\" (known: \(Self.keys.sorted().joined(separator: ", ")))")
        }
        func string(_ key: String) throws(FFIError) -> String? {
            switch object[key] {
            case nil, .null?: return nil
            case .string(let text)?:
                guard !text.contains("\u{0}") else { throw .invalid("config_json.\(key) contains a NUL character") }
                return text
            default: throw .invalid("config_json.\(key) is not a string")
            }
        }
        environment = try string("environment")
        if let environment, !ConfigurationLoader.environments.contains(environment) {
            throw .invalid(
                "config_json.environment \"\(environment)\" is not one of \(ConfigurationLoader.environments.joined(separator: ", "))")
        }
        configPath = try string("config_path")
        databaseURL = try string("database_url")
        templatePath = try string("template_path")
        webBindAddress = try string("web_bind_address")
        grpcBindAddress = try string("grpc_bind_address")
        if let level = try string("log_level") {
            guard let parsed = Self.level(level) else {
                throw .invalid("config_json.log_level \"\(level)\" is not one of trace, debug, info, warning, error")
            }
            logLevel = parsed
        }
        if let format = try string("log_format") {
            guard let parsed = WorkerLogging.Format(rawValue: format.lowercased()) else {
                throw .invalid("config_json.log_format \"\(format)\" is not one of text, json")
            }
            logFormat = parsed
        }
    }

    /// A level name (`warn` too); nil when unknown.
    static func level(_ name: String) -> Logger.Level? {
        let lowered = name.lowercased()
        return lowered == "warn" ? .warning : Logger.Level(rawValue: lowered)
    }

    /// The process environment with the options' overrides, as the loaders read it.
    func environment(_ base: [String: String]) -> [String: String] {
        var environment = base
        if let value = self.environment { environment["TASKER_ENV"] = value }
        if let databaseURL { environment["DATABASE_URL"] = databaseURL }
        if let templatePath { environment["TASKER_TEMPLATE_PATH"] = templatePath }
        if let configPath, !Self.isDirectory(configPath) { environment["TASKER_CONFIG_PATH"] = configPath }
        return environment
    }

    /// `config_path` when it names a directory (the configuration root).
    var configRoot: String? { configPath.flatMap { Self.isDirectory($0) ? $0 : nil } }

    /// The configuration root the worker reads: ``configRoot``; else, when nothing says where the
    /// configuration is (`TASKER_CONFIG_PATH`, `WORKSPACE_PATH`) and the working directory has no
    /// `config/tasker`, the tree that comes with this library (``LibraryLocation/configurationRoot``),
    /// so that a host runs from any directory; else nil (the loader's own default).
    func configRoot(environment: [String: String]) -> String? {
        if let configRoot { return configRoot }
        let told = ["TASKER_CONFIG_PATH", "WORKSPACE_PATH"].contains { !(environment[$0] ?? "").isEmpty }
        guard !told, !FileManager.default.fileExists(atPath: "config/tasker/base/worker.toml") else { return nil }
        return LibraryLocation.configurationRoot
    }

    static func isDirectory(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
    }
}
