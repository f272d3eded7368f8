import Foundation
import TaskerTestSupport
import Testing
import TaskerWorker

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which handlers the real `tasker-worker run` serves: the image's default command must not carry the
/// example handlers (one of them used to trap on `{"number": 4000000000}` and take the worker down);
/// `run --examples` (what `scripts/dev` runs) does. Read from the running worker's own template
/// validation endpoint, which lists every step whose callable has no registered handler.
@Suite("tasker-worker run handler set", .timeLimit(.minutes(2)))
struct RunCommandHandlerSetTests {
    @Test func productionRunRegistersNoExampleHandlers() async throws {
        try await withTestDatabase { db in
            let errors = try await Self.validationErrors(db, arguments: ["run"])
            // Every step of the example template is unresolved: not one example callable is registered.
            for callable in ["examples.linear.square", "examples.linear.add", "examples.linear.multiply", "examples.linear.verify"] {
                #expect(errors.contains { $0.contains("no handler registered for callable \"\(callable)\"") }, "\(errors)")
            }
        }
    }

    @Test func runWithExamplesRegistersTheExampleHandlers() async throws {
        try await withTestDatabase { db in
            let errors = try await Self.validationErrors(db, arguments: ["run", "--examples"])
            #expect(errors.isEmpty, "\(errors)")
        }
    }

    /// Starts the binary with `arguments` over the example templates, asks it to validate
    /// `examples/linear_workflow`, stops it and returns the validation errors.
    static func validationErrors(_ db: TestDatabase, arguments: [String]) async throws -> [String] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("run-handlers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let logFile = directory.appendingPathComponent("worker.log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLineTests.binary)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: TestEnvironment.repositoryRoot)
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "TASKER_CONFIG_PATH")
        env["DATABASE_URL"] = db.url
        env["TASKER_ENV"] = "test"
        env["TASKER_LOG_FORMAT"] = "text"
        env["TASKER_WEB_BIND_ADDRESS"] = "127.0.0.1:0"
        env["TASKER_WORKER_GRPC_BIND_ADDRESS"] = "127.0.0.1:0"
        env["TASKER_TEMPLATE_PATH"] = TestEnvironment.repositoryRoot + "/config/tasks/examples"
        process.environment = env
        let log = try FileHandle(forWritingTo: logFile)
        defer { try? log.close() }
        process.standardError = log
        process.standardOutput = log
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        func workerLog() -> String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

        var address: String?
        try await waitUntil(timeout: .seconds(60)) {
            address = Self.restAddress(in: workerLog())
            return address != nil || !process.isRunning
        }
        let rest = try #require(address, "no REST address in the worker log:\n\(workerLog())")
        var request = URLRequest(url: try #require(URL(string: "http://\(rest)/v1/templates/examples/linear_workflow/1.0.0/validate")))
        request.httpMethod = "POST"
        let (body, response) = try await URLSession.shared.data(for: request)
        process.terminate()
        #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: body, as: UTF8.self))")
        let json = try JSONDecoder().decode(JSONValue.self, from: body)
        guard case .array(let errors)? = json["errors"] else {
            Issue.record("no errors array in \(String(decoding: body, as: UTF8.self))")
            return []
        }
        return errors.compactMap(\.stringValue)
    }

    /// The address of the worker's "REST server listening" log line (text format), if logged yet.
    static func restAddress(in log: String) -> String? {
        for line in log.split(separator: "\n") where line.contains("REST server listening") {
            guard let range = line.range(of: "address=") else { continue }
            let value = line[range.upperBound...].prefix { $0 != " " }.filter { $0 != "\"" }
            if !value.isEmpty { return String(value) }
        }
        return nil
    }
}
