import ArgumentParser
import Foundation
import TaskerModel
import TaskerPostgres
import TaskerStore
import TaskerWorker

/// `tasker-worker migrate`: install PGMQ (extension or SQL script) and apply `migrations/*.sql`.
/// With the queues in a database of their own (`--queue-database-url`, `PGMQ_DATABASE_URL`, or
/// `common.pgmq_database.url`), both databases: the queue database first (PGMQ and its helpers),
/// then the task database (the task tables, no PGMQ); `MigrationScope`.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Install PGMQ and apply the Tasker schema migrations (idempotent).")

    @Option(help: "Database URL (default: DATABASE_URL, else common.database.url of the configuration).")
    var databaseURL: String?

    @Option(
        help:
            "The queues' own database (default: PGMQ_DATABASE_URL, else common.pgmq_database.url when the configuration is read); empty or equal to the database URL: one database."
    )
    var queueDatabaseURL: String?

    @Option(help: "PGMQ's SQL-only install script, for servers without the pgmq extension (default: TASKER_PGMQ_SQL, else .tasker/venv).")
    var pgmqSql: String?

    @Option(help: "Directory of migration files (default: TASKER_MIGRATIONS_DIR, else ./migrations).")
    var migrationsDir: String?

    func run() async throws {
        WorkerLogging.bootstrap()
        let environment = ProcessInfo.processInfo.environment
        let given = databaseURL ?? environment["DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
        let configured = try given == nil ? configuredDatabases() : nil
        let url = given ?? configured?.database.url ?? ""
        // The queue database: the flag, the variable, else the configuration's (read here even when
        // the task database's URL came from the flag or the variable; one that does not load names none).
        let queueURL =
            queueDatabaseURL ?? environment["PGMQ_DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (configured ?? (try? ConfigurationLoader().load().configuration.common))?.pgmqDatabase.url ?? ""
        let runs: [(database: String, scope: MigrationScope)] =
            queueURL.isEmpty || queueURL == url
            ? [(url, .everything)] : [(queueURL, .queueDatabase), (url, .taskDatabase)]
        let locator = PGMQScriptLocator(environment: environment)
        for (database, scope) in runs {
            let migrator = Migrator(
                databaseURL: database,
                migrationsDirectory: migrationsDir ?? environment["TASKER_MIGRATIONS_DIR"] ?? "migrations",
                pgmqScript: locator.locate(explicit: pgmqSql),
                pgmqSearchPaths: locator.candidates(explicit: pgmqSql), scope: scope)
            let prefix = scope == .everything ? "" : "\(scope.rawValue): "
            do {
                let report = try await migrator.run()
                print("\(prefix)PGMQ: \(report.pgmq.map(\.description) ?? "not installed (the queues have their own database)")")
                print("\(prefix)applied: \(report.applied.isEmpty ? "nothing (up to date)" : report.applied.joined(separator: ", "))")
                if !report.alreadyApplied.isEmpty { print("\(prefix)already applied: \(report.alreadyApplied.count) file(s)") }
                for file in report.changedSinceApplied { print("warning: \(file) changed after it was applied; not re-applied") }
            } catch {
                let target = scope == .everything ? "" : " (\(scope.rawValue) \(Redaction.redactCredentials(database)))"
                FileHandle.standardError.write(Data("tasker-worker migrate\(target): \(error)\n".utf8))
                throw ExitCode.failure
            }
        }
    }

    private func configuredDatabases() throws -> CommonConfiguration {
        do {
            return try ConfigurationLoader().load().configuration.common
        } catch {
            FileHandle.standardError.write(
                Data("tasker-worker migrate: no --database-url or DATABASE_URL, and the configuration does not load:\n\(error)\n".utf8))
            throw ExitCode.failure
        }
    }
}
