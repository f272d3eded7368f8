/// Why `tasker-worker migrate` could not finish.
public enum MigrationError: Error, CustomStringConvertible {
    /// The migrations directory is missing or holds no `*.sql` file.
    case noMigrations(directory: String)
    /// PGMQ is not installed, the server has no `pgmq` extension, and no `pgmq.sql` was found.
    case pgmqUnavailable(searched: [String])
    /// The PGMQ script could not be read or applied.
    case pgmqScriptFailed(path: String, underlying: any Error)
    /// A migration file failed; its transaction was rolled back.
    case fileFailed(file: String, underlying: any Error)
    /// A file could not be read.
    case unreadable(path: String, underlying: any Error)
    /// The ledger table belongs to another role than the one migrating: whoever created it could
    /// make each write to it run code of theirs (a trigger, a rule) as the migrating role.
    case foreignLedger(table: String, owner: String, migrator: String)

    public var description: String {
        switch self {
        case .noMigrations(let directory):
            return "no migrations: \(directory) does not exist or contains no .sql files"
        case .pgmqUnavailable(let searched):
            return "PGMQ is not installed in this database, the server has no pgmq extension, and no pgmq.sql "
                + "was found (looked in: \(searched.joined(separator: ", "))). Install the PyPI package "
                + "pgmq==1.1.4 (scripts/dev does) and pass --pgmq-sql PATH or set TASKER_PGMQ_SQL"
        case .pgmqScriptFailed(let path, let underlying):
            return "applying the PGMQ script \(path) failed: \(underlying)"
        case .fileFailed(let file, let underlying):
            return "migration \(file) failed and was rolled back: \(underlying)"
        case .unreadable(let path, let underlying):
            return "cannot read \(path): \(underlying)"
        case .foreignLedger(let table, let owner, let migrator):
            return "\(table) is owned by role \(owner), not by \(migrator), the role running the migrations: another "
                + "role created it, and the owner of a table can make every write to it run code of its own as the "
                + "migrating role. Nothing was migrated. Find out who created it, drop it (DROP TABLE \(table)), and "
                + "revoke CREATE on schema public from roles that should not have it (PostgreSQL 15 and later revoke "
                + "it from PUBLIC by default)"
        }
    }
}
