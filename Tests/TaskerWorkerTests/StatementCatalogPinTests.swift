import Foundation
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerPostgres
@testable import TaskerWorker

/// Every variant of the statement families built from named pieces (the worker's claim, result and
/// recovery, the orchestration's transitions) is pinned whole in `Fixtures/statements/<name>.sql`, so
/// a change to any piece shows in review as the final statements it changes; and each binds exactly the
/// parameters it names. (PostgreSQL prepares each one, every parameter typed: `StatementCatalogTests` in
/// TaskerSystemTests.)
///
/// After an intended change: `TASKER_UPDATE_STATEMENTS=1 swift test --filter StatementCatalogPinTests`
/// rewrites the files; review their diff.
@Suite("Statement catalog")
struct StatementCatalogPinTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/statements")
    static let queue = PinnedStatements.workerQueue

    static func all() throws -> [NamedStatement] {
        try PinnedStatements.all(orchestration: TransitionRepository.Statements.catalog)
    }

    @Test func everyVariantIsPinnedWhole() throws {
        let statements = try Self.all()
        #expect(Set(statements.map(\.name)).count == statements.count, "names are unique")
        let update = ProcessInfo.processInfo.environment["TASKER_UPDATE_STATEMENTS"] == "1"
        if update { try FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true) }
        for statement in statements {
            let file = Self.directory.appendingPathComponent("\(statement.name).sql")
            let text = "-- \(statement.parameterList)\n" + statement.sql + "\n"
            if update { try text.write(to: file, atomically: true, encoding: .utf8) }
            let pinned = try? String(contentsOf: file, encoding: .utf8)
            #expect(
                pinned == text, "\(statement.name) differs from \(file.path); rerun with TASKER_UPDATE_STATEMENTS=1 and review the diff")
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path).filter { $0.hasSuffix(".sql") }
        #expect(Set(files) == Set(statements.map { "\($0.name).sql" }), "a pinned file of a statement that no longer exists")
    }

    /// `$1` … `$n` all occur, none beyond: n is the number of parameters named.
    @Test func everyVariantBindsExactlyTheParametersItNames() throws {
        for statement in try Self.all() {
            let used = Set(Self.placeholders(statement.sql))
            #expect(used == Set(statement.parameters.indices.map { $0 + 1 }), "\(statement.name): uses \(used.sorted())")
        }
    }

    /// `tasker-worker statements --json` (what the pgbench floors read) carries every worker
    /// statement whole with its parameters; a queue name static SQL may not address, or an unknown
    /// layout, is refused with a message naming it.
    @Test func theCommandsJSONCarriesEveryWorkerStatementAndRefusesBadArguments() throws {
        let json = try WorkerStatementCatalog.render(workerQueue: Self.queue, layout: "pgmq-1.5+", json: true)
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(json.utf8))
        guard case .array(let list)? = decoded["statements"] else {
            Issue.record("no statements array: \(json.prefix(200))")
            return
        }
        let expected = try WorkerStatementCatalog.statements(workerQueue: Self.queue, layout: .withLastReadAt)
        #expect(list.map { $0["name"]?.stringValue } == expected.map(\.name))
        #expect(list.map { $0["sql"]?.stringValue } == expected.map(\.sql))
        #expect(list.map { $0["parameters"] } == expected.map { .array($0.parameters.map { .string($0) }) })
        for (queue, layout, named) in [
            (#"worker_x"; DROP TABLE tasker.tasks; --"#, "pgmq-1.5+", "DROP TABLE"), (Self.queue, "pgmq-9", "pgmq-9"),
        ] {
            do {
                _ = try WorkerStatementCatalog.render(workerQueue: queue, layout: layout, json: false)
                Issue.record("\(queue) / \(layout) was rendered")
            } catch {
                #expect(error.description.contains(named), "\(error.description)")
            }
        }
    }

    static func placeholders(_ sql: String) -> [Int] {
        var numbers: [Int] = []
        var rest = Substring(sql)
        while let dollar = rest.firstIndex(of: "$") {
            let digits = rest[rest.index(after: dollar)...].prefix { $0.isASCII && $0.isNumber }
            if let number = Int(digits) { numbers.append(number) }
            rest = rest[rest.index(after: dollar)...]
        }
        return numbers
    }
}
