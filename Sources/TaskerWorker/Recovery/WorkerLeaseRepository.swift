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
    /// ($3 the host name, $4 whether it scans for dead workers' steps), also after it lapsed (a lapsed
    /// lease is taken back: the steps recovered meanwhile refuse this worker's late results). Returns
    /// the server process that ran it, and whether this worker holds the fleet's crash-recovery
    /// scanner turn (`tasker.recovery_scanner`, migration 0011): a recovering worker's renewal TAKES
    /// the turn, for $5 seconds, when it is free or has expired, but never extends it: only scanning
    /// does (`RecoveryStatements.keepTurn`). So a worker (or a lease row) that renews without
    /// scanning cannot keep the fleet from being scanned. Concurrent renewals take the turn once:
    /// the second waits for the first's row lock and then finds the turn held.
    static let renewLease = """
        WITH renewed AS (
            INSERT INTO tasker.worker_leases AS lease (worker_uuid, expires_at, renewed_at, started_at, hostname, recovers)
            VALUES ($1::uuid, clock_timestamp() + make_interval(secs => $2::float8), clock_timestamp(), clock_timestamp(),
                    left($3::text, 255), $4::boolean)
            ON CONFLICT (worker_uuid) DO UPDATE
               SET expires_at = EXCLUDED.expires_at, renewed_at = EXCLUDED.renewed_at, recovers = EXCLUDED.recovers
            RETURNING lease.worker_uuid
        ), taken AS (
            UPDATE tasker.recovery_scanner
               SET holder = $1::uuid, held_until = clock_timestamp() + make_interval(secs => $5::float8)
             WHERE $4::boolean AND (holder IS NULL OR held_until < clock_timestamp()) AND EXISTS (SELECT 1 FROM renewed)
            RETURNING holder
        )
        SELECT pg_catalog.pg_backend_pid() AS pid,
               EXISTS (SELECT 1 FROM taken)
               OR ($4::boolean AND EXISTS (SELECT 1 FROM tasker.recovery_scanner
                                            WHERE holder = $1::uuid AND held_until > clock_timestamp())) AS scanner
        """

    /// What a renewal answered.
    struct Renewal: Sendable, Equatable {
        /// The server process that ran it (`SessionPoolerError.check`).
        var serverPID: Int32
        /// Whether this worker holds the fleet's crash-recovery scanner turn now.
        var scanner: Bool
    }

    /// Deletes the lease of worker $1 (shutdown: its steps are all settled).
    static let releaseLease = "DELETE FROM tasker.worker_leases WHERE worker_uuid = $1::uuid"

    /// Deletes every lease that has expired (their workers are dead or will write theirs again).
    static let purgeExpiredLeases = "DELETE FROM tasker.worker_leases WHERE expires_at < clock_timestamp()"

    /// The lease of `worker` lasts `duration` from now on the database's clock; `recovers`: it takes
    /// the scanner turn (for `turn`) when the turn is free.
    @discardableResult
    static func renew(
        _ c: isolated PostgresConnection, worker: UUID, hostname: String, duration: Duration, recovers: Bool = true,
        turn: Duration = .seconds(4)
    ) throws(PostgresError) -> Renewal {
        let row = try c.query(renewLease, [worker, duration.inSeconds, hostname, recovers, turn.inSeconds])[0]
        return Renewal(serverPID: try row.decode("pid"), scanner: try row.decode("scanner"))
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
/// PostgreSQL, and the configuration does not say so. Connected directly, the worker prepares its
/// statements once per session, fences a broken session by its server process id
/// (`StepRepository+Recovery`) and LISTENs on `url`: none of which works through a pooler, so it
/// refuses to run unless `common.database.transaction_pooler` says the URL goes through one (then
/// `PostgresRoute.transactionPooler` applies and this check is off). Checked on each lease renewal,
/// whose answer names the server process that ran it.
struct SessionPoolerError: Error, CustomStringConvertible, Sendable {
    var connectionPID: Int32
    var serverPID: Int32

    /// Throws when the statement that `serverPID` ran in is not in the session `c` was opened with
    /// and `c` was not opened as a pooler's client.
    static func check(_ c: isolated PostgresConnection, serverPID: Int32) throws(SessionPoolerError) {
        guard c.route == .direct, serverPID != c.backendPID else { return }
        throw SessionPoolerError(connectionPID: c.backendPID, serverPID: serverPID)
    }

    package var description: String {
        """
        the worker's connection reports server process \(connectionPID) but its statement ran in server process \
        \(serverPID): the database URL goes through a connection pooler (PgBouncer, or similar) and \
        common.database.transaction_pooler is false. Set common.database.transaction_pooler = true (statements \
        unnamed, session settings from the role, LISTEN on common.database.listen_url or none: docs/capacity.md), \
        or point common.database.url at PostgreSQL directly
        """
    }
}
