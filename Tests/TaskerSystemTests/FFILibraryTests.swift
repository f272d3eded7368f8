import Foundation
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres

/// `libTaskerWorkerFFI.so` from C: a program compiled with gcc against
/// `bindings/c/include/tasker_worker.h` (`Fixtures/ffi/abi_check.c`) checks the ABI's error
/// answers and a whole bootstrap → status → poll → stop lifecycle on a test database.
@Suite("C ABI library", .timeLimit(.minutes(2)))
struct FFILibraryTests {
    static var root: String { TestEnvironment.repositoryRoot }

    /// The library `swift build` (and `scripts/test`) produced.
    static func library() throws -> String {
        let candidates = ["\(root)/.build/debug", "\(root)/.build/release"]
        guard let directory = candidates.first(where: { FileManager.default.fileExists(atPath: "\($0)/libTaskerWorkerFFI.so") })
        else {
            throw TestSetupError("libTaskerWorkerFFI.so not built: run swift build (scripts/test builds every product)")
        }
        return directory
    }

    /// Compiles the C host against the header and the library; returns the program's path.
    static func compile() throws -> (program: String, libraryDirectory: String) {
        let directory = try library()
        let program = FileManager.default.temporaryDirectory.appendingPathComponent("abi-check-\(UUID().uuidString)").path
        let outcome = try Subprocess.run(
            "/usr/bin/gcc",
            [
                "-Wall", "-Werror", "-o", program, "\(root)/Tests/Fixtures/ffi/abi_check.c",
                "-I\(root)/bindings/c/include", "-L\(directory)", "-lTaskerWorkerFFI", "-Wl,-rpath,\(directory)",
            ],
            environment: ["PATH": "/usr/bin:/bin"])
        guard outcome.status == 0 else { throw TestSetupError("gcc failed: \(outcome)") }
        return (program, directory)
    }

    /// The program's `<name> <status> …` lines by name.
    static func lines(_ output: String) -> [String: String] {
        var lines: [String: String] = [:]
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2 { lines[String(parts[0])] = String(parts[1]) }
        }
        return lines
    }

    @Test func errorsComeAsStatusCodesWithALastErrorMessage() throws {
        let (program, _) = try Self.compile()
        let outcome = try Subprocess.run(program, ["errors"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(outcome.status == 0, "\(outcome)")
        let lines = Self.lines(outcome.stdout)
        #expect(lines["version"] == "0.1.0")
        #expect(lines["bad_json"]?.hasPrefix("1 (null) | config_json is not JSON") == true, "\(outcome.stdout)")
        #expect(lines["unknown_key"]?.hasPrefix("1 (null) | config_json: unknown key \"bogus\"") == true, "\(outcome.stdout)")
        #expect(lines["null_output"]?.hasPrefix("1 (null) | result_json is NULL") == true, "\(outcome.stdout)")
        #expect(lines["poll_before_bootstrap"]?.hasPrefix("2 (null) | no worker is running") == true, "\(outcome.stdout)")
        #expect(lines["complete_null"]?.hasPrefix("1 (null) | event_id is NULL") == true, "\(outcome.stdout)")
        #expect(lines["complete_before_bootstrap"]?.hasPrefix("2 ") == true, "\(outcome.stdout)")
        #expect(lines["stop_not_running"] == #"0 {"status":"not_running"} | (no error)"#, "\(outcome.stdout)")
        #expect(lines["is_running"] == "0")
        #expect(lines["log"] == "0 (null) | (no error)")
        #expect(outcome.stderr.contains("hello from C") && outcome.stderr.contains("lang=c"), "\(outcome.stderr)")
        #expect(lines["log_bad_level"]?.hasPrefix("1 (null) | level 42") == true, "\(outcome.stdout)")
    }

    /// One step for a foreign handler, announcing its success in-process.
    static let yaml = """
        name: foreign
        namespace_name: foreign
        version: 1.0.0
        steps:
          - name: py_step
            handler: { callable: python.double }
            publishes_events:
              - name: foreign.done
                description: in-process only
                condition: success
                delivery_mode: fast
                schema: null
        """

    /// A step enqueued before the worker starts is polled and completed from C; its result is
    /// stored as a Swift handler's would be, and its `fast` domain event reaches the C host.
    @Test func aCHostBootstrapsPollsCompletesAndStopsTheEmbeddedWorker() async throws {
        let (program, _) = try Self.compile()
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let task = try await harness.createTask(steps: ["py_step"], context: ["n": 1])
            try await harness.enqueue(task, "py_step")
            let config: JSONValue = [
                "environment": "test", "config_path": .string("\(Self.root)/config/tasker"), "database_url": .string(db.url),
                "template_path": .string(harness.templateDirectory), "web_bind_address": "127.0.0.1:0",
                "grpc_bind_address": "127.0.0.1:0", "log_level": "warning",
            ]
            let outcome = try Subprocess.run(
                program, ["lifecycle", try config.jsonString()], environment: ["PATH": "/usr/bin:/bin"])
            #expect(outcome.status == 0, "\(outcome)")
            let lines = Self.lines(outcome.stdout)
            #expect(lines["bootstrap"]?.hasPrefix("0 {") == true, "\(outcome)")
            #expect(lines["bootstrap"]?.contains(#""namespaces":["foreign"]"#) == true, "\(outcome.stdout)")
            #expect(lines["bootstrap_again"]?.hasPrefix("3 (null) | ") == true, "\(outcome.stdout)")
            #expect(lines["status"]?.contains(#""running":true"#) == true, "\(outcome.stdout)")
            #expect(lines["dispatch_metrics"]?.hasPrefix("0 {") == true, "\(outcome.stdout)")
            #expect(lines["poll"] == "0 \(task["py_step"].uuidString.lowercased())", "\(outcome.stdout)")
            #expect(lines["empty_poll"] == "0 (null) | (no error)", "\(outcome.stdout)")
            #expect(lines["complete_mismatch"]?.hasPrefix("1 (null) | result.step_uuid") == true, "\(outcome.stdout)")
            #expect(lines["complete"] == "0 (null) | (no error)", "\(outcome.stdout)")
            #expect(lines["complete_again"]?.hasPrefix("4 (null) | event") == true, "\(outcome.stdout)")
            #expect(lines["complete_unknown"]?.hasPrefix("4 (null) | event") == true, "\(outcome.stdout)")
            #expect(lines["checkpoint_bad"]?.hasPrefix("1 (null) | checkpoint_json is not a JSON object") == true, "\(outcome.stdout)")
            #expect(lines["starvation"] == "0 0" && lines["cleanup"] == "0 0", "\(outcome.stdout)")
            #expect(lines["health"]?.hasPrefix("0 {") == true, "\(outcome.stdout)")
            #expect(lines["metrics"]?.contains(#""ffi_dispatch":{"#) == true, "\(outcome.stdout)")
            #expect(lines["metrics"]?.contains(#""completions":1"#) == true, "\(outcome.stdout)")
            #expect(lines["config"]?.hasPrefix("0 {") == true, "\(outcome.stdout)")
            #expect(lines["in_process_event"]?.hasPrefix("0 {") == true, "\(outcome.stdout)")
            #expect(lines["in_process_event"]?.contains(#""event_name":"foreign.done""#) == true, "\(outcome.stdout)")
            #expect(lines["no_more_events"] == "0 (null) | (no error)", "\(outcome.stdout)")
            #expect(lines["begin_shutdown"] == #"0 {"status":"shutting_down"} | (no error)"#, "\(outcome.stdout)")
            #expect(lines["stop"] == #"0 {"status":"stopped"} | (no error)"#, "\(outcome)")
            #expect(lines["poll_after_stop"]?.hasPrefix("2 ") == true, "\(outcome.stdout)")
            #expect(outcome.stdout.contains("is_running 1\n") && outcome.stdout.contains("is_running 0\n"), "\(outcome.stdout)")
            // A process may run a worker again after stopping one.
            #expect(lines["rebootstrap"]?.hasPrefix("0 {") == true, "\(outcome.stdout)")
            #expect(lines["stop_again"] == #"0 {"status":"stopped"} | (no error)"#, "\(outcome.stdout)")

            #expect(try await harness.state(task["py_step"]) == "enqueued_for_orchestration")
            let result = try await harness.result(task["py_step"])
            #expect(result.isSuccess && result.result["from"] == "c")
        }
    }
}
