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
        /// The library to load; nil: `TASKER_WORKER_LIBRARY`, else `.build/{debug,release}/libTaskerWorkerFFI.so`
        /// of the Swift packages the working directory is in (each directory from it up that holds a
        /// `Package.swift`: a handler package inside the worker's checkout finds the checkout's build),
        /// else `/usr/local/lib/libTaskerWorkerFFI.so` (an installed copy). A library writable by
        /// another user is refused.
        public var libraryPath: String?
        /// The most handlers running at once, overdue ones (past their step's timeout, cancelled but not
        /// returned) included: the host polls for no more steps until one returns.
        public var maxRunningHandlers: Int
        /// How long one poll of the dispatch channel waits before the host checks for its stop
        /// (between 1 ms and 10 s).
        public var pollTimeout: Duration

        public init(
            environment: String? = nil, configPath: String? = nil, databaseURL: String? = nil,
            templatePath: String? = nil, webBindAddress: String? = nil, grpcBindAddress: String? = nil,
            logLevel: String? = nil, logFormat: String? = nil, libraryPath: String? = nil,
            maxRunningHandlers: Int = 64, pollTimeout: Duration = .milliseconds(250)
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
            self.maxRunningHandlers = max(1, maxRunningHandlers)
            self.pollTimeout = pollTimeout
        }

        /// ``pollTimeout`` in whole milliseconds, between 1 and 10,000.
        var pollMilliseconds: Int32 {
            let milliseconds = pollTimeout / .milliseconds(1)
            guard milliseconds.isFinite else { return 250 }
            return Int32(min(10_000, max(1, milliseconds.rounded())))
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
                if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
                    for build in ["debug", "release"] {
                        candidates.append(directory.appendingPathComponent(".build/\(build)/\(WorkerLibrary.fileName)").path)
                    }
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
