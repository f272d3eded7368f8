import Foundation
import TaskerTestSupport
import Testing

/// The operator's view of the hostile configuration files of `ConfigurationHostileInputTests`
/// (TaskerModelTests): `tasker-worker config check FILE` prints the error and exits non-zero.
@Suite("config check on hostile files")
struct ConfigCheckCommandTests {
    @Test func configCheckReportsTheseFilesWithoutCrashing() throws {
        try withTemporaryDirectory { directory in
            let header = try writeFile(directory, "header.toml", "[[[worker]]\n")
            let outcome = try CommandLineTests.run(["config", "check", header], environment: ["TASKER_ENV": "test"])
            #expect(outcome.status != 0)
            #expect(outcome.status < 128, "killed by a signal: \(outcome.stderr)")
            #expect((outcome.stdout + outcome.stderr).contains("\(header): invalid TOML at line 1, column 3"), "\(outcome)")

            let idle = try writeFile(
                directory, "idle.toml",
                """
                [worker.mpsc_channels.handler_dispatch.load_shedding]
                capacity_threshold_percent = 0
                """)
            let rejected = try CommandLineTests.run(["config", "check", idle], environment: ["TASKER_ENV": "test"])
            #expect(rejected.status != 0)
            #expect(
                (rejected.stdout + rejected.stderr).contains("capacity_threshold_percent = 0.0: must be between 1.0 and 100.0"),
                "\(rejected)")
        }
    }
}
