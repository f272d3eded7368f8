import Foundation
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerPostgres
@testable import TaskerWorker

/// PostgreSQL prepares every variant of the statement families built from named pieces (the worker's
/// claim, result and recovery, the orchestration's transitions), every parameter typed. (Each variant
/// pinned whole in `Fixtures/statements/<name>.sql` and binding exactly the parameters it names:
/// `StatementCatalogPinTests` in TaskerWorkerTests.)
@Suite("Statement catalog prepared by PostgreSQL")
struct StatementCatalogTests {
    /// PostgreSQL prepares every variant with every parameter typed (none left `unknown`).
    @Test func postgresPreparesEveryVariant() async throws {
        try await withTestDatabase { db in
            let c = try await db.connect()
            for queue in [PinnedStatements.workerQueue, QueueNames.stepResults] { try await c.query("SELECT pgmq.create($1)", [queue]) }
            for (index, statement) in try PinnedStatements.all(orchestration: TransitionRepository.Statements.catalog).enumerated() {
                try await c.execute("PREPARE catalog_\(index) AS \(statement.sql)")
                let types: [String] = try await c.query(
                    "SELECT unnest(parameter_types)::text AS t FROM pg_prepared_statements WHERE name = $1", ["catalog_\(index)"]
                ).map { try $0.decode("t") }
                #expect(types.count == statement.parameters.count, "\(statement.name): \(types)")
                #expect(!types.contains("unknown"), "\(statement.name): \(types)")
            }
            await c.close()
        }
    }
}
