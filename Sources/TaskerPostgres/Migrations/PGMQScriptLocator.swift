import Foundation

/// Finds upstream PGMQ's SQL-only install script (`pgmq/sql/pgmq.sql`, shipped in the PyPI package
/// `pgmq==1.1.4`, PGMQ 1.13.0) for servers without the `pgmq` extension.
///
/// Order: an explicit path, then `TASKER_PGMQ_SQL`, then the venv the set-up scripts create
/// (`.tasker/venv`, under the current directory or `WORKSPACE_PATH`).
public struct PGMQScriptLocator: Sendable {
    public let environment: [String: String]
    public let workingDirectory: String

    public init(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        workingDirectory: String = FileManager.default.currentDirectoryPath
    ) {
        self.environment = environment
        self.workingDirectory = workingDirectory
    }

    /// The places searched, in order (for error messages).
    public func candidates(explicit: String?) -> [String] {
        var paths: [String] = []
        if let explicit { paths.append(explicit) }
        if let fromEnv = environment["TASKER_PGMQ_SQL"], !fromEnv.isEmpty { paths.append(fromEnv) }
        var roots = [workingDirectory]
        if let workspace = environment["WORKSPACE_PATH"], !workspace.isEmpty { roots.append(workspace) }
        for root in roots {
            let lib = "\(root)/.tasker/venv/lib"
            let pythons = (try? FileManager.default.contentsOfDirectory(atPath: lib))?.sorted() ?? ["python3"]
            for python in pythons {
                paths.append("\(lib)/\(python)/site-packages/pgmq/sql/pgmq.sql")
            }
        }
        return paths
    }

    /// The first existing script, or nil.
    public func locate(explicit: String?) -> String? {
        candidates(explicit: explicit).first { FileManager.default.isReadableFile(atPath: $0) }
    }
}
