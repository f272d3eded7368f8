import Foundation

extension HandlerHost {
    /// What the embedded worker is started with: each value overrides the environment variable
    /// the `tasker-worker` daemon reads for it; nil leaves the environment's (the keys of
    /// `tasker_worker_bootstrap`'s `config_json`, see `bindings/c/include/tasker_worker.h`).
    public struct Configuration: Sendable, Equatable {
        /// `TASKER_ENV`: `development`, `test` or `production`.
        public var environment: String?
        /// The configuration root (`base/`, `environments/`) or one merged TOML file
        /// (`TASKER_CONFIG_PATH`). Nil: `TASKER_CONFIG_PATH`, `WORKSPACE_PATH`, the working
        /// directory's `config/tasker`, else the tree of the checkout the library was built in.
        public var configPath: String?
        /// `DATABASE_URL`.
        public var databaseURL: String?
        /// `TASKER_TEMPLATE_PATH`: the directory of this package's templates.
        public var templatePath: String?
        /// `TASKER_WEB_BIND_ADDRESS` (`127.0.0.1:0` takes a free port).
        public var webBindAddress: String?
        /// `TASKER_WORKER_GRPC_BIND_ADDRESS` (`127.0.0.1:0` takes a free port).
        public var grpcBindAddress: String?
        /// `trace`, `debug`, `info`, `warning` or `error`.
        public var logLevel: String?
        /// `text` or `json`.
        public var logFormat: String?
        /// The library to load; nil: `TASKER_WORKER_LIBRARY`, else the nearest
        /// `.build/{debug,release}/libTaskerWorkerFFI.so` from the working directory up, else
        /// `/usr/local/lib/libTaskerWorkerFFI.so` (an installed copy).
        public var libraryPath: String?
        /// How long one poll of the dispatch channel waits before the host checks for its stop.
        public var pollTimeout: Duration

        public init(
            environment: String? = nil, configPath: String? = nil, databaseURL: String? = nil,
            templatePath: String? = nil, webBindAddress: String? = nil, grpcBindAddress: String? = nil,
            logLevel: String? = nil, logFormat: String? = nil, libraryPath: String? = nil,
            pollTimeout: Duration = .milliseconds(250)
        ) {
            self.environment = environment
            self.configPath = configPath
            self.databaseURL = databaseURL
            self.templatePath = templatePath
            self.webBindAddress = webBindAddress
            self.grpcBindAddress = grpcBindAddress
            self.logLevel = logLevel
            self.logFormat = logFormat
            self.libraryPath = libraryPath
            self.pollTimeout = pollTimeout
        }

        /// The `config_json` of `tasker_worker_bootstrap`: the keys that are set.
        var bootstrapDocument: JSONValue {
            let pairs: [(String, String?)] = [
                ("environment", environment), ("config_path", configPath), ("database_url", databaseURL),
                ("template_path", templatePath), ("web_bind_address", webBindAddress),
                ("grpc_bind_address", grpcBindAddress), ("log_level", logLevel), ("log_format", logFormat),
            ]
            var members: [String: JSONValue] = [:]
            for (key, value) in pairs { if let value { members[key] = .string(value) } }
            return .object(members)
        }

        /// Where the library is looked for, in order (see ``libraryPath``).
        func libraryCandidates(
            environment: [String: String] = ProcessInfo.processInfo.environment,
            workingDirectory: String = FileManager.default.currentDirectoryPath
        ) -> [String] {
            if let libraryPath { return [libraryPath] }
            if let explicit = environment["TASKER_WORKER_LIBRARY"], !explicit.isEmpty { return [explicit] }
            var candidates: [String] = []
            var directory = URL(fileURLWithPath: workingDirectory).standardizedFileURL
            while true {
                for build in ["debug", "release"] {
                    candidates.append(directory.appendingPathComponent(".build/\(build)/\(WorkerLibrary.fileName)").path)
                }
                let parent = directory.deletingLastPathComponent()
                if parent.path == directory.path { break }
                directory = parent
            }
            candidates.append("/usr/local/lib/\(WorkerLibrary.fileName)")
            return candidates
        }
    }
}
