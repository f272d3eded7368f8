import Foundation
import TaskerModel
import Testing

/// The repository's `config/tasker`.
package let repositoryConfigRoot: String = TestEnvironment.repositoryRoot + "/config/tasker"

/// A fresh temporary directory, removed after `body`.
package func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("tasker-config-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    return try body(directory)
}

/// Writes `text` to `directory/name` and returns the path.
package func writeFile(_ directory: String, _ name: String, _ text: String) throws -> String {
    let path = directory + "/" + name
    try FileManager.default.createDirectory(
        atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    return path
}

/// Loads `text` as a single file with the given environment and returns the error, failing if it loads.
package func loadError(_ text: String, environment: [String: String] = [:]) throws -> (ConfigurationLoadError, String) {
    try withTemporaryDirectory { dir in
        let file = try writeFile(dir, "bad.toml", text)
        do throws(ConfigurationLoadError) {
            _ = try ConfigurationLoader(environment: environment).load(file: file)
            Issue.record("expected \(file) to fail")
            return (ConfigurationLoadError(issues: []), file)
        } catch {
            return (error, file)
        }
    }
}
