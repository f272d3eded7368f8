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
    /// the server process that ran it, and whether this worker is the fleet's crash-recovery scanner:
    /// it recovers and no other recovering worker holds an unexpired lease taken before its own
    /// (`started_at`, then `worker_uuid`; migration 0010). Two workers renewing at the same moment
    /// may both see themselves elected for one renewal interval: harmless, the recovery write is a
    /// compare-and-set.
    static let renewLease = """
        WITH renewed AS (
            INSERT INTO tasker.worker_leases AS lease (worker_uuid, expires_at, renewed_at, started_at, hostname, recovers)
            VALUES ($1::uuid, clock_timestamp() + make_interval(secs => $2::float8), clock_timestamp(), clock_timestamp(),
                    left($3::text, 255), $4::boolean)
            ON CONFLICT (worker_uuid) DO UPDATE
               SET expires_at = EXCLUDED.expires_at, renewed_at = EXCLUDED.renewed_at, recovers = EXCLUDED.recovers
            RETURNING lease.worker_uuid, lease.started_at, lease.recovers
        )
        SELECT pg_catalog.pg_backend_pid() AS pid,
               renewed.recovers AND NOT EXISTS (
                   SELECT 1 FROM tasker.worker_leases older
                    WHERE older.recovers AND older.expires_at > clock_timestamp()
                      AND older.worker_uuid <> renewed.worker_uuid
                      AND (older.started_at, older.worker_uuid) < (renewed.started_at, renewed.worker_uuid)) AS scanner
          FROM renewed
        """

    /// What a renewal answered.
    struct Renewal: Sendable, Equatable {
        /// The server process that ran it (`SessionPoolerError.check`).
        var serverPID: Int32
        /// Whether this worker is the fleet's crash-recovery scanner now.
        var scanner: Bool
    }

    /// Deletes the lease of worker $1 (shutdown: its steps are all settled).
    static let releaseLease = "DELETE FROM tasker.worker_leases WHERE worker_uuid = $1::uuid"

    /// Deletes every lease that has expired (their workers are dead or will write theirs again).
    static let purgeExpiredLeases = "DELETE FROM tasker.worker_leases WHERE expires_at < clock_timestamp()"

    /// The lease of `worker` lasts `duration` from now on the database's clock; `recovers`: it scans
    /// for dead workers' steps when elected.
    @discardableResult
    static func renew(
        _ c: isolated PostgresConnection, worker: UUID, hostname: String, duration: Duration, recovers: Bool = true
    ) throws(PostgresError) -> Renewal {
        let row = try c.query(renewLease, [worker, duration.inSeconds, hostname, recovers])[0]
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
