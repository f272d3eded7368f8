import Foundation
import Logging
import TaskerTestSupport
import Testing

@testable import TaskerWorker

/// The quiet test log: worker log lines of a test go to its own file under `TASKER_TEST_LOG_DIR`
/// (`scripts/test` sets it and prints the files of failed tests), lines outside a test to
/// `unattributed.log`.
@Suite("Per-test log files")
struct TestLogFilesTests {
    @Test("a worker's log line inside a test lands in that test's file, one outside any test in unattributed.log")
    func linesGoToTheTestsFile() async throws {
        guard let directory = TestLogFiles.directory else {
            Issue.record("TASKER_TEST_LOG_DIR is not set: run the tests with scripts/test")
            return
        }
        TestLogFiles.install()
        let marker = UUID().uuidString.lowercased()
        Logger(label: "tasker.test").warning("inside the test", metadata: ["marker": "\(marker)"])
        await Task.detached { Logger(label: "tasker.test").warning("outside any test", metadata: ["marker": "\(marker)"]) }.value

        let own = directory + "/" + TestLogFiles.fileName(for: Test.current)
        #expect(own.hasSuffix("/a_worker_s_log_line_inside_a_test_lands_in_that_test_s_file__one_outside_any_test_in_unattributed.log.log"))
        let ownText = try String(contentsOfFile: own, encoding: .utf8)
        // Checked by the message and the marker only: another unit test of this process may switch
        // the log format between text and JSON (`LoggingTests`) while this one runs; a warning
        // passes every level it sets.
        let ownLines = ownText.split(separator: "\n").filter { $0.contains(marker) }
        #expect(ownLines.count == 1 && ownLines[0].contains("inside the test"), "\(ownText)")
        let unattributed = try String(contentsOfFile: directory + "/unattributed.log", encoding: .utf8)
        let outsideLines = unattributed.split(separator: "\n").filter { $0.contains(marker) }
        #expect(outsideLines.count == 1 && outsideLines[0].contains("outside any test"), "\(outsideLines)")
    }
}
