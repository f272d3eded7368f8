import Foundation
import Synchronization
import TaskerWorker
import Testing

/// The worker log lines of the tests, one file per test, so that the test log shows the tests.
///
/// With `TASKER_TEST_LOG_DIR` set (`scripts/test` sets it), `install` (called by every
/// `withTestDatabase`; idempotent) sends every line `WorkerLogging` writes to
/// `<dir>/<test>.log`, the test found from Swift Testing's `Test.current` (a task-local, so lines
/// of workers started inside a test go to its file); lines logged outside any test go to
/// `<dir>/unattributed.log`. `scripts/test` prints the files of the tests that failed. Without
/// the variable, lines go to standard error as before.
package enum TestLogFiles {
    /// The directory from `TASKER_TEST_LOG_DIR` (nil: not routed).
    package static let directory: String? = ProcessInfo.processInfo.environment["TASKER_TEST_LOG_DIR"].flatMap {
        $0.isEmpty ? nil : $0
    }

    private static let installed: Bool = {
        guard let directory else { return false }
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        WorkerLogging.bootstrap()
        WorkerLogging.setOutput(LogOutput { line in append(line, to: directory + "/" + fileName(for: Test.current)) })
        return true
    }()

    /// Routes the worker's log lines into the per-test files (once per process).
    package static func install() {
        _ = installed
    }

    /// `<name>.log` for a test: its display name, else its function name, with every character
    /// outside `[A-Za-z0-9._-]` replaced by `_`, at most 120 characters (`scripts/test` maps a
    /// failed test's name the same way).
    package static func fileName(for test: Test?) -> String {
        guard let test else { return "unattributed.log" }
        return sanitized(test.displayName ?? test.name) + ".log"
    }

    package static func sanitized(_ name: String) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        return String(String(name.map { allowed.contains($0) ? $0 : "_" }).prefix(120))
    }

    /// One `write` of the whole line in append mode (lines of concurrent tasks do not interleave).
    private static func append(_ line: String, to path: String) {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(line.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}
