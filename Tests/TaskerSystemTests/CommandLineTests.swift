import Foundation
import TaskerModel
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import TaskerWorker
import Testing

/// The `tasker-worker` executable as an operator runs it.
@Suite("tasker-worker command line", .timeLimit(.minutes(2)))
struct CommandLineTests {
    typealias Outcome = Subprocess.Outcome

    /// The production executable.
    static var binary: String { builtExecutable("tasker-worker") }
    /// The development tools (`run` with the examples, `orchestrate`, `submit`, `progress`).
    static var devBinary: String { builtExecutable("tasker-dev") }

    private static func builtExecutable(_ name: String) -> String {
        let root = TestEnvironment.repositoryRoot
        let candidates = ["\(root)/.build/debug/\(name)", "\(root)/.build/release/\(name)"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[0]
    }

    static func run(
        _ arguments: [String], environment: [String: String] = [:],
        executable: String = CommandLineTests.binary
    ) throws -> Outcome {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "TASKER_CONFIG_PATH")
        env.removeValue(forKey: "DATABASE_URL")
        // Tests run in parallel: let the operator servers pick free ports.
        env["TASKER_WEB_BIND_ADDRESS"] = "127.0.0.1:0"
        env["TASKER_WORKER_GRPC_BIND_ADDRESS"] = "127.0.0.1:0"
        env.merge(environment) { _, new in new }
        return try Subprocess.run(executable, arguments, environment: env, directory: TestEnvironment.repositoryRoot)
    }

    @Test func bothExecutablesPrintTheirVersion() throws {
        for executable in [Self.binary, Self.devBinary] {
            let outcome = try Self.run(["--version"], executable: executable)
            let name = URL(fileURLWithPath: executable).lastPathComponent
            #expect(outcome.status == 0, "\(outcome.stderr)")
            #expect(outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(name) \(TaskerWorkerVersion.current)")
        }
    }

    /// Bad `--context` JSON is refused before any connection, saying where the parser stopped.
    @Test func submitSaysWhereTheContextJSONIsBroken() throws {
        let outcome = try Self.run(
            ["submit", "examples", "linear_workflow", "1.0.0", "--context", #"{"number": }"#], executable: Self.devBinary)
        #expect(outcome.status != 0)
        #expect(outcome.stderr.contains("--context is not valid JSON: Invalid value around character 11"), "\(outcome.stderr)")
        #expect(!outcome.stderr.contains("DecodingError"))
    }

    @Test func configCheckRejectsZeroHandlersAndNamesTheKey() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("worker.toml")
        try """
        [worker.mpsc_channels.handler_dispatch]
        max_concurrent_handlers = 0
        """.write(to: file, atomically: true, encoding: .utf8)
        let outcome = try Self.run(["config", "check", file.path])
        #expect(outcome.status != 0)
        #expect(outcome.stderr.contains("worker.mpsc_channels.handler_dispatch.max_concurrent_handlers"))
        #expect(outcome.stderr.contains(file.path))
    }

    @Test func configCheckPrintsTheEffectiveConfigurationWithSecretsRedacted() throws {
        let outcome = try Self.run(
            ["config", "check"],
            environment: [
                "TASKER_ENV": "test", "DATABASE_URL": "postgresql://tasker:s3cret-pw@db.example:5432/tasker_test",
            ])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("max_concurrent_handlers"))
        #expect(!outcome.stdout.contains("s3cret-pw"))
        #expect(outcome.stdout.contains("db.example"))
    }

    @Test func migrateIsIdempotentFromTheCommandLine() async throws {
        try await withEmptyTestDatabase { db in
            let environment = ["TASKER_PGMQ_SQL": TestEnvironment.pgmqScript ?? "", "DATABASE_URL": db.url]
            let first = try Self.run(["migrate"], environment: environment)
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stdout.contains("applied: 0001"))
            let second = try Self.run(["migrate", "--database-url", db.url], environment: environment)
            #expect(second.status == 0, "\(second.stderr)")
            #expect(second.stdout.contains("applied: nothing (up to date)"))
            #expect(second.stdout.contains("PGMQ: already installed"))
        }
    }

    @Test func runStartsIdleAndStopsCleanlyOnSIGTERM() async throws {
        try await withTestDatabase { db in
            let worker = try WorkerProcess(["run"], db: db, templatePath: TestEnvironment.repositoryRoot + "/config/tasks")
            defer { worker.kill() }
            // The worker's listener connection shows up in pg_stat_activity once it is running.
            let admin = try await db.connect()
            try await waitUntil(timeout: .seconds(20)) {
                try await !admin.query(
                    """
                    SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
                      AND application_name = 'tasker-worker-listener'
                    """
                ).isEmpty
            }
            guard try await worker.terminate(within: .seconds(20)) else {  // SIGTERM
                Issue.record("the worker did not exit within 20 s of SIGTERM")
                return
            }
            #expect(worker.process.terminationStatus == 0, "\(worker.log)")
            #expect(worker.log.contains("tasker worker stopped"))
        }
    }
}

/// What the production executable contains: the worker and its operator tools, never the example
/// handlers, the companion orchestration or the development tools (`tasker-dev` has those).
@Suite("tasker-worker binary contents", .timeLimit(.minutes(2)))
struct ProductionBinaryTests {
    @Test func productionBinaryLinksNoExamplesNoOrchestrationAndNoDevCommands() throws {
        let help = try CommandLineTests.run(["--help"])
        for devCommand in ["orchestrate", "submit", "progress", "dev-progress"] {
            #expect(!help.stdout.contains(devCommand), "tasker-worker offers \(devCommand):\n\(help.stdout)")
        }
        let production = try Data(contentsOf: URL(fileURLWithPath: CommandLineTests.binary))
        let development = try Data(contentsOf: URL(fileURLWithPath: CommandLineTests.devBinary))
        // Swift mangles a module's declarations with its name's length and name.
        for module in ["14TaskerExamples", "19TaskerOrchestration", "12TaskerDevCLI"] {
            #expect(production.range(of: Data(module.utf8)) == nil, "tasker-worker links \(module)")
        }
        // The check would see them: tasker-dev links both.
        for module in ["14TaskerExamples", "19TaskerOrchestration"] {
            #expect(development.range(of: Data(module.utf8)) != nil, "tasker-dev does not mention \(module)")
        }
        let devHelp = try CommandLineTests.run(["--help"], executable: CommandLineTests.devBinary)
        for command in ["run", "orchestrate", "submit", "progress"] {
            #expect(devHelp.stdout.contains(command), "tasker-dev lacks \(command):\n\(devHelp.stdout)")
        }
    }
}
