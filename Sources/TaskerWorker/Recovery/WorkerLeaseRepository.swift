import Foundation
import TaskerPostgres

/// The statements of the worker's liveness lease (`tasker.worker_leases`, migration 0008). Each is
/// one statement in its own transaction, sent unnamed (not prepared: a prepared statement lives in
/// one server session): the lease keeps no state in any session, so it works through any pool of
/// connections, a transaction-mode pooler such as PgBouncer included (`LivenessThroughPoolerTests`).
/// The claim checks it in the same way (`ClaimStatement`), and so does crash recovery
/// (`RecoveryStatements`), all on the database's clock.
enum WorkerLeaseRepository {
    /// Writes or extends the lease of worker $1 to the database's `clock_timestamp()` + $2 seconds
    /// ($3 the host name), also after it lapsed (a lapsed lease is taken back: the steps recovered
    /// meanwhile refuse this worker's late results). Returns the server process that ran it.
    static let renewLease = """
        INSERT INTO tasker.worker_leases AS lease (worker_uuid, expires_at, renewed_at, started_at, hostname)
        VALUES ($1::uuid, clock_timestamp() + make_interval(secs => $2::float8), clock_timestamp(), clock_timestamp(),
                left($3::text, 255))
        ON CONFLICT (worker_uuid) DO UPDATE SET expires_at = EXCLUDED.expires_at, renewed_at = EXCLUDED.renewed_at
        RETURNING pg_catalog.pg_backend_pid() AS pid
        """

    /// Deletes the lease of worker $1 (shutdown: its steps are all settled).
    static let releaseLease = "DELETE FROM tasker.worker_leases WHERE worker_uuid = $1::uuid"

    /// Deletes every lease that has expired (their workers are dead or will write theirs again).
    static let purgeExpiredLeases = "DELETE FROM tasker.worker_leases WHERE expires_at < clock_timestamp()"

    /// The lease of `worker` lasts `duration` from now on the database's clock. Returns the server
    /// process that stored it (`SessionPoolerError.check` compares it with the connection's).
    @discardableResult
    static func renew(
        _ c: isolated PostgresConnection, worker: UUID, hostname: String, duration: Duration
    ) throws(PostgresError) -> Int32 {
        try c.query(renewLease, [worker, duration.inSeconds, hostname])[0].decode("pid")
    }

    static func release(_ c: isolated PostgresConnection, worker: UUID) throws(PostgresError) {
        try c.query(releaseLease, [worker])
    }

    static func purgeExpired(_ c: isolated PostgresConnection) throws(PostgresError) {
        try c.query(purgeExpiredLeases)
    }
}

/// The worker's statements do not run in the server session its connection was opened with: a
/// connection pooler (PgBouncer in any `pool_mode`, or similar) sits between the worker and
/// PostgreSQL. The lease works through one, but the lost-answer resolution fences the broken
/// session by its server process id (`StepRepository+Recovery`), which a pooler hides, the step
/// path's statements are prepared once per session, and LISTEN needs a session of its own; so the
/// worker refuses to run (issue #29 is where this changes). Checked on each lease renewal, whose
/// answer names the server process that ran it.
struct SessionPoolerError: Error, CustomStringConvertible, Sendable {
    var connectionPID: Int32
    var serverPID: Int32

    /// Throws when the statement that `serverPID` ran in is not in the session `c` was opened with.
    static func check(_ c: isolated PostgresConnection, serverPID: Int32) throws(SessionPoolerError) {
        guard serverPID == c.backendPID else {
            throw SessionPoolerError(connectionPID: c.backendPID, serverPID: serverPID)
        }
    }

    package var description: String {
        """
        the worker's connection reports server process \(connectionPID) but its statement ran in server process \
        \(serverPID): the database URL goes through a connection pooler (PgBouncer, or similar). The worker's \
        lost-answer resolution fences a broken session by its server process id and LISTEN needs a session of its \
        own, which a pooler does not give. Point common.database.url at PostgreSQL directly
        """
    }
}
