import ArgumentParser
import Foundation
import TaskerModel
import TaskerPostgres
import TaskerStore
import TaskerWorker

/// `tasker-worker migrate`: install PGMQ (extension or SQL script) and apply `migrations/*.sql`.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Install PGMQ and apply the Tasker schema migrations (idempotent).")

    @Option(help: "Database URL (default: DATABASE_URL, else common.database.url of the configuration).")
    var databaseURL: String?

    @Option(help: "PGMQ's SQL-only install script, for servers without the pgmq extension (default: TASKER_PGMQ_SQL, else .tasker/venv).")
    var pgmqSql: String?

    @Option(help: "Directory of migration files (default: TASKER_MIGRATIONS_DIR, else ./migrations).")
    var migrationsDir: String?

    func run() async throws {
        WorkerLogging.bootstrap()
        let environment = ProcessInfo.processInfo.environment
        let url = try databaseURL ?? environment["DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 } ?? configuredURL()
        let locator = PGMQScriptLocator(environment: environment)
        let migrator = Migrator(
            databaseURL: url,
            migrationsDirectory: migrationsDir ?? environment["TASKER_MIGRATIONS_DIR"] ?? "migrations",
            pgmqScript: locator.locate(explicit: pgmqSql),
            pgmqSearchPaths: locator.candidates(explicit: pgmqSql))
        do {
            let report = try await migrator.run()
            print("PGMQ: \(report.pgmq)")
            print("applied: \(report.applied.isEmpty ? "nothing (up to date)" : report.applied.joined(separator: ", "))")
            if !report.alreadyApplied.isEmpty { print("already applied: \(report.alreadyApplied.count) file(s)") }
            for file in report.changedSinceApplied { print("warning: \(file) changed after it was applied; not re-applied") }
        } catch {
            FileHandle.standardError.write(Data("tasker-worker migrate: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }

    private func configuredURL() throws -> String {
        do {
            return try ConfigurationLoader().load().configuration.common.database.url
        } catch {
            FileHandle.standardError.write(
                Data("tasker-worker migrate: no --database-url or DATABASE_URL, and the configuration does not load:\n\(error)\n".utf8))
            throw ExitCode.failure
        }
    }
}
