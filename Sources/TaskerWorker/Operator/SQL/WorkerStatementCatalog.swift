import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Every statement of the step path and crash recovery as the worker prepares it, whole, with its
/// parameters in binding order: for a DBA reading `pg_stat_statements`, for the pgbench floors
/// (`Benchmarks/benchlib/floor.py`), and pinned by `StatementCatalogTests`. `tasker-worker
/// statements` prints it.
public enum WorkerStatementCatalog {
    /// A queue table layout the catalog can render static statements for, by its name
    /// (`pgmq-1.5+`, `pgmq-legacy`).
    public static let layoutNames = [PGMQTableLayout.withLastReadAt.rawValue, PGMQTableLayout.withoutLastReadAt.rawValue]

    /// Why a catalog cannot be rendered (an invalid queue name or layout).
    public struct RenderError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The statements, the static ones on the tables of `workerQueue` (and of
    /// `orchestration_step_results`) in `layout`.
    package static func statements(workerQueue: String, layout: PGMQTableLayout) throws(RenderError) -> [NamedStatement] {
        guard let queueTables = PGMQQueueTables(queue: workerQueue), let resultTables = PGMQQueueTables(queue: QueueNames.stepResults)
        else { throw RenderError(description: "\"\(workerQueue)\" is not a queue name PGMQ's static statements may address") }
        return [
            NamedStatement(name: "claim_settings", prepared: StepStatements.claimSettings, parameters: ["statement_timeout_ms"]),
            NamedStatement(name: "hydrate", prepared: StepStatements.hydrate, parameters: ["step_uuid", "task_uuid"]),
            NamedStatement(name: "hydrate.with_rows", prepared: StepStatements.hydrateWithRows, parameters: ["step_uuid", "task_uuid"]),
            ClaimStatement.functions.statement,
            ClaimStatement(settling: .tables(queueTables, layout)).statement,
            ClaimStatement.broker.statement,
            ResultStatement.functions.statement,
            ResultStatement(retiring: .own, sending: .tables(resultTables, layout)).statement,
            ResultStatement.broker.statement,
            NamedStatement(name: "recover.scan", prepared: RecoveryStatements.scan, parameters: ["limit"]),
            ResultStatement.recoverFunctions.statement,
            ResultStatement.recoverBroker.statement,
            NamedStatement(
                name: "recover.stale_in_progress", prepared: RecoveryStatements.staleInProgress, parameters: ["threshold_seconds"]),
            NamedStatement(
                name: "recover.orphaned_claims", prepared: StepRepository.Recovery.orphanedClaims,
                parameters: ["step_uuids", "claim_metadata_list"]),
        ]
    }

    /// The catalog as text (`-- name ($1 a, $2 b)` then the statement and `;`), or as JSON
    /// (`{"statements":[{"name","parameters","sql"}]}`).
    public static func render(workerQueue: String, layout: String, json: Bool) throws(RenderError) -> String {
        guard let tableLayout = PGMQTableLayout(rawValue: layout) else {
            throw RenderError(description: "unknown queue table layout \"\(layout)\" (known: \(layoutNames.joined(separator: ", ")))")
        }
        let statements = try statements(workerQueue: workerQueue, layout: tableLayout)
        if json {
            let list = statements.map { statement -> JSONValue in
                .object([
                    "name": .string(statement.name), "parameters": .array(statement.parameters.map { .string($0) }),
                    "sql": .string(statement.sql),
                ])
            }
            do {
                return try JSONValue.object(["statements": .array(list)]).jsonString() + "\n"
            } catch {
                throw RenderError(description: "the catalog does not encode as JSON: \(error)")
            }
        }
        return statements.map { "-- \($0.name) (\($0.parameterList))\n\($0.sql);\n" }.joined(separator: "\n")
    }
}
