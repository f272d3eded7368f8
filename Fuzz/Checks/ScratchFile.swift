import Foundation

/// One file per process under the temporary directory, rewritten for each input: for the loaders
/// that read a path (`ConfigurationLoader`, `TaskTemplateLoader`).
public struct ScratchFile: Sendable {
    public let path: String

    /// `name` gets the process id in front (parallel fuzzing jobs never share a file).
    public init(name: String) {
        path = (NSTemporaryDirectory() as NSString).appendingPathComponent("tasker-fuzz-\(getpid())-\(name)")
    }

    /// Replaces the file's contents with `bytes`.
    public func write(_ bytes: [UInt8]) {
        let written = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        FuzzContract.require(written, "cannot write \(path)")
    }
}
