import Foundation
import Logging

/// How PGMQ got into the database.
public enum PGMQInstallRoute: Sendable, Equatable, CustomStringConvertible {
    /// `pgmq.meta` already existed (extension or script applied before).
    case alreadyInstalled
    /// `CREATE EXTENSION pgmq` (the server has the extension).
    case createExtension
    /// The SQL-only script at this path.
    case sqlScript(path: String)

    public var description: String {
        switch self {
        case .alreadyInstalled: return "already installed"
        case .createExtension: return "CREATE EXTENSION pgmq"
        case .sqlScript(let path): return "SQL-only install script \(path)"
        }
    }
}

/// Which database a migration run prepares.
///
/// With the queues in a database of their own (`[common.pgmq_database]`, `PGMQ_DATABASE_URL`), each
/// database gets the files it needs (`MigrationScope.applies(_:)`): PGMQ and its helpers only in the
/// queue database, the task tables only in the task database. One migration file per database would
/// have been simpler to read, but files already applied cannot change: a placement per file keeps
/// every existing ledger valid.
public enum MigrationScope: String, Sendable, Equatable, CaseIterable {
    /// One database holds everything (the default): PGMQ, then every file.
    case everything
    /// The task database of a split: every file but the queue helpers; PGMQ is not installed.
    case taskDatabase = "task database"
    /// The queue database of a split: PGMQ, schema `tasker`, and the files that the queues need.
    case queueDatabase = "queue database"

    /// The files the queue database needs: the send-with-NOTIFY helpers and read/delete by id
    /// (0003), `tasker.create_queue` (0008; its `worker_leases` table stays unused there) and
    /// `tasker.pgmq_queued_steps` (0012). A new file that names PGMQ must be placed here
    /// (`MigrationScopeTests` fails until it is).
    public static let queueFiles: Set<String> = [
        "0003_pgmq_notifications.sql", "0008_least_privilege_and_leases.sql", "0012_queued_steps.sql",
    ]
    /// Of those, the files the task database does without (0008's leases are the task database's).
    public static let queueOnlyFiles: Set<String> = ["0003_pgmq_notifications.sql", "0012_queued_steps.sql"]

    /// Whether a run of this scope applies `file`.
    public func applies(_ file: String) -> Bool {
        switch self {
        case .everything: true
        case .taskDatabase: !Self.queueOnlyFiles.contains(file)
        case .queueDatabase: Self.queueFiles.contains(file)
        }
    }

    /// Whether this scope installs PGMQ.
    public var installsPGMQ: Bool { self != .taskDatabase }
}

/// What a migration run did.
public struct MigrationReport: Sendable, Equatable {
    /// How PGMQ got into the database; nil for a task database of a split (no PGMQ there).
    public var pgmq: PGMQInstallRoute?
    /// Files applied by this run, in order.
    public var applied: [String]
    /// Files that had been applied before.
    public var alreadyApplied: [String]
    /// Already-applied files whose content has changed since (they are not re-applied).
    public var changedSinceApplied: [String]
}

/// Applies PGMQ and then `migrations/*.sql` in filename order, each file in one transaction,
/// recording applied files in `public.tasker_worker_migrations`; a second run applies nothing.
/// Concurrent runs are serialised by a lock on that ledger (`migrateLocked`), which only its owner
/// can take; a ledger another role owns is refused (`ensureOwnLedger`).
public struct Migrator: Sendable {
    /// The table recording applied files.
    public static let ledgerTable = "public.tasker_worker_migrations"

    public let databaseURL: String
    public let migrationsDirectory: String
    public let pgmqScript: String?
    public let pgmqSearchPaths: [String]
    /// Which database this run prepares (`everything` unless the queues have their own).
    public let scope: MigrationScope
    public let logger: Logger

    /// - Parameters:
    ///   - databaseURL: the database to migrate.
    ///   - migrationsDirectory: the directory of `migrations/*.sql`.
    ///   - pgmqScript: the PGMQ SQL script to use when the server has no `pgmq` extension
    ///     (see `PGMQScriptLocator`); `pgmqSearchPaths` are named in the error when it is nil.
    ///   - pgmqSearchPaths: where the PGMQ script was looked for.
    ///   - scope: which database this run prepares.
    ///   - logger: the migrator's logger.
    public init(
        databaseURL: String, migrationsDirectory: String, pgmqScript: String?,
        pgmqSearchPaths: [String] = [], scope: MigrationScope = .everything, logger: Logger = Logger(label: "tasker.migrate")
    ) {
        self.scope = scope
        self.databaseURL = databaseURL
        self.migrationsDirectory = migrationsDirectory
        self.pgmqScript = pgmqScript
        self.pgmqSearchPaths = pgmqSearchPaths
        self.logger = logger
    }

    /// The migration files of this run's scope, sorted by name.
    public func migrationFiles() throws(MigrationError) -> [String] {
        try allMigrationFiles().filter(scope.applies)
    }

    /// Every migration file, sorted by name.
    public func allMigrationFiles() throws(MigrationError) -> [String] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: migrationsDirectory)
        } catch {
            throw .noMigrations(directory: migrationsDirectory)
        }
        let files = names.filter { $0.hasSuffix(".sql") }.sorted()
        if files.isEmpty { throw .noMigrations(directory: migrationsDirectory) }
        return files
    }

    public func run() async throws -> MigrationReport {
        let files = try migrationFiles()
        let contents = try files.map { name throws(MigrationError) in (name, try Self.read("\(migrationsDirectory)/\(name)")) }
        let connection = try await PostgresConnection.connect(
            url: databaseURL, applicationName: "tasker-worker-migrate",
            logger: logger)
        do {
            try await ensureOwnLedger(connection)
            let report = try await migrateLocked(connection, files: contents)
            await connection.close()
            return report
        } catch {
            await connection.close()
            throw error
        }
    }

    /// Runs the migrations while a second session holds the ledger locked (`SHARE UPDATE EXCLUSIVE`,
    /// which conflicts with itself and not with the ledger's inserts): concurrent runs wait for each
    /// other. Not an advisory lock, which any role that can connect could hold for ever: locking
    /// the ledger in that mode needs a privilege on it, which only its owner has.
    private func migrateLocked(_ connection: PostgresConnection, files: [(String, String)]) async throws -> MigrationReport {
        let lock = try await PostgresConnection.connect(url: databaseURL, applicationName: "tasker-worker-migrate-lock", logger: logger)
        do {
            try await lock.execute("BEGIN; LOCK TABLE \(Self.ledgerTable) IN SHARE UPDATE EXCLUSIVE MODE")
            let report = try await migrate(connection, files: files)
            try await lock.execute("COMMIT")
            await lock.close()
            return report
        } catch {
            await lock.close()
            throw error
        }
    }

    private func migrate(_ connection: PostgresConnection, files: [(String, String)]) async throws -> MigrationReport {
        let route = scope.installsPGMQ ? try await installPGMQ(connection) : nil
        // The queue helpers live in schema `tasker`, which the task files create elsewhere.
        if scope == .queueDatabase { try await connection.execute("CREATE SCHEMA IF NOT EXISTS tasker") }
        var applied: [String: String] = [:]
        for row in try await connection.query("SELECT filename, checksum FROM \(Self.ledgerTable)") {
            applied[try row.decode("filename")] = try row.decode("checksum", as: String.self)
        }
        var report = MigrationReport(pgmq: route, applied: [], alreadyApplied: [], changedSinceApplied: [])
        for (name, sql) in files {
            if let checksum = applied[name] {
                report.alreadyApplied.append(name)
                let current: String = try await connection.query("SELECT md5($1) AS sum", [sql])[0].decode("sum")
                if current != checksum {
                    report.changedSinceApplied.append(name)
                    logger.warning("migration changed after it was applied; not re-applying", metadata: ["file": "\(name)"])
                }
                continue
            }
            do {
                try await connection.transaction { connection in
                    try connection.execute(sql)
                    try connection.query("INSERT INTO \(Self.ledgerTable) (filename, checksum) VALUES ($1, md5($2))", [name, sql])
                }
            } catch {
                throw MigrationError.fileFailed(file: name, underlying: error)
            }
            logger.info("applied migration", metadata: ["file": "\(name)"])
            report.applied.append(name)
        }
        return report
    }

    /// Creates the ledger when it is missing, and refuses to go on when it belongs to another role:
    /// in schema `public`, which PUBLIC may create in before PostgreSQL 15, a role that can merely
    /// connect could have created it first, with a trigger that runs as the migrating role (often a
    /// superuser) on the first write.
    private func ensureOwnLedger(_ connection: PostgresConnection) async throws {
        do {
            try await connection.execute(
                """
                CREATE TABLE IF NOT EXISTS \(Self.ledgerTable) (
                    filename   text PRIMARY KEY,
                    checksum   text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
        } catch {
            // Two first runs at once: the creation that lost the race finds the other's table.
            guard error.isUniqueViolation else { throw error }
            logger.debug("another migration created the ledger at the same moment", metadata: ["error": "\(error)"])
        }
        let row = try await connection.query(
            """
            SELECT pg_catalog.pg_get_userbyid(c.relowner)::text AS owner, current_user::text AS migrator
              FROM pg_catalog.pg_class c WHERE c.oid = $1::regclass
            """, [Self.ledgerTable])[0]
        let (owner, migrator): (String, String) = (try row.decode("owner"), try row.decode("migrator"))
        guard owner == migrator else {
            throw MigrationError.foreignLedger(table: Self.ledgerTable, owner: owner, migrator: migrator)
        }
    }

    private func installPGMQ(_ connection: PostgresConnection) async throws -> PGMQInstallRoute {
        let installed: Bool = try await connection.query("SELECT to_regclass('pgmq.meta') IS NOT NULL AS present")[0].decode("present")
        if installed { return .alreadyInstalled }
        let available: Bool = try await connection.query(
            "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pgmq') AS available")[0].decode("available")
        if available {
            try await connection.execute("CREATE EXTENSION IF NOT EXISTS pgmq CASCADE")
            logger.info("installed PGMQ with CREATE EXTENSION")
            return .createExtension
        }
        guard let path = pgmqScript else { throw MigrationError.pgmqUnavailable(searched: pgmqSearchPaths) }
        let script = try Self.read(path)
        do {
            try await connection.transaction { connection in _ = try connection.execute(script) }
        } catch {
            throw MigrationError.pgmqScriptFailed(path: path, underlying: error)
        }
        logger.info("installed PGMQ from its SQL script", metadata: ["path": "\(path)"])
        return .sqlScript(path: path)
    }

    private static func read(_ path: String) throws(MigrationError) -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw .unreadable(path: path, underlying: error)
        }
    }
}
