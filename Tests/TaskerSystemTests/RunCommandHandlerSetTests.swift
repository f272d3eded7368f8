import Foundation
import TaskerModel
import TaskerTestSupport
import TaskerWorker
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which handlers the real `tasker-worker run` serves: the image's default command must not carry the
/// example handlers (one of them used to trap on `{"number": 4000000000}` and take the worker down);
/// `tasker-dev run` (what `scripts/dev` runs) does. Read from the running worker's own template
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

    @Test func devRunRegistersTheExampleHandlers() async throws {
        try await withTestDatabase { db in
            let errors = try await Self.validationErrors(db, arguments: ["run"], executable: CommandLineTests.devBinary)
            #expect(errors.isEmpty, "\(errors)")
        }
    }

    /// Starts the binary with `arguments` over the example templates, asks it to validate
    /// `examples/linear_workflow`, stops it and returns the validation errors.
    static func validationErrors(
        _ db: TestDatabase, arguments: [String],
        executable: String = CommandLineTests.binary
    ) async throws -> [String] {
        let worker = try WorkerProcess(
            arguments, db: db,
            templatePath: TestEnvironment.repositoryRoot + "/config/tasks/examples",
            executable: executable)
        defer { worker.kill() }
        let rest = try #require(try await worker.restAddress(), "no REST address in the worker log:\n\(worker.log)")
        var request = URLRequest(url: try #require(URL(string: "http://\(rest)/v1/templates/examples/linear_workflow/1.0.0/validate")))
        request.httpMethod = "POST"
        let (body, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: body, as: UTF8.self))")
        let json = try JSONDecoder().decode(JSONValue.self, from: body)
        guard case .array(let errors)? = json["errors"] else {
            Issue.record("no errors array in \(String(decoding: body, as: UTF8.self))")
            return []
        }
        return errors.compactMap(\.stringValue)
    }
}
