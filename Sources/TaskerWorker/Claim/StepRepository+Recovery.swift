import Foundation
import Logging
import TaskerPostgres

/// Lost answers. A claim or a completion is one transaction sent in one round trip; when the
/// connection breaks after the server got the `COMMIT` (a terminated backend, a failover, a cut
/// network), the worker cannot tell from the error whether it took effect
/// (`PostgresError.leavesOutcomeUnknown`). Guessing either way loses a step: retrying a claim that
/// committed finds the step `in_progress` with nobody to run it; retrying a completion that
/// committed finds the step moved on and drops its domain events.
///
/// So the worker asks. Every transition it writes carries metadata it made itself, with a
/// microsecond timestamp and its worker uuid (the completion's also the whole result), and that
/// metadata is kept for the retry: the transition with exactly that metadata is there if and only
/// if the attempt committed. Before asking, the broken session is fenced: if its server process
/// still exists (the client noticed the break first), it is terminated and waited for, so it
/// cannot commit after the answer was read. The completion's metadata is upstream's; the claim's
/// adds `worker_uuid` (`ClaimStamp`).
///
/// Behind a transaction-mode pooler (`PostgresRoute.transactionPooler`) there is no server process
/// to fence: the client's process id is the pooler's, and the transaction may still be queued in
/// the pooler or running in a shared server session. A completion is safe all the same (it is a
/// compare-and-set on the worker's own claim: a retry and a late commit of the first attempt cannot
/// both store, and `isStored` is asked again after a retry that finds the step moved on). A claim
/// whose answer was lost and whose transaction commits only after the lookup read "not claimed"
/// would leave its step `in_progress` under this live worker: `OrphanedClaimAudit` finds such steps
/// (claimed by this worker, not running here) and retires them as the crash recovery does.
extension StepRepository {
    /// After a claim of `requests` with `stamp` failed with an unknown outcome: what
    /// it did, read on a fresh connection. A request whose step carries that claim is `.claimed`
    /// (with the step's attempts); the others are `.notClaimable` with their current state, as the
    /// claim would have reported them. When no request shows the claim, the transaction did not
    /// commit. `session` is the broken connection's server process (fenced first).
    static func findClaims(
        _ c: isolated PostgresConnection, _ requests: [ClaimRequest], stamp: ClaimStamp,
        session: Int32?
    ) throws(PostgresError) -> [ClaimAttempt] {
        try fence(c, session)
        guard !requests.isEmpty else { return [] }
        let metadata = PostgresJSON(raw: stamp.metadata)
        let statements = claimStatements(requests) { .prepared(Recovery.claimedBy, [$0.stepUUID, metadata]) }
        return try claimAttempts(try c.pipeline(statements)[...], requests)
    }

    /// After a completion `write` failed with an unknown outcome (or a retry found the step no
    /// longer `in_progress`): whether an earlier attempt stored it. `session` as in `findClaims`.
    static func isStored(
        _ c: isolated PostgresConnection, _ write: CompletionWrite,
        session: Int32?
    ) throws(PostgresError) -> Bool {
        try fence(c, session)
        return try c.query(Recovery.storedAs, [write.stepUUID, write.toState, PostgresJSON(raw: write.metadata)])[0]
            .decode("stored")
    }

    /// Ends the broken session's server process if it still exists (its client is gone; it may still
    /// hold the request unread, or be committing it), waiting for it to exit. Its own round trip, so
    /// that the lookups that follow take their snapshots after it, whatever the isolation level.
    /// Throws when the process did not exit in time (asked again later).
    static func fence(_ c: isolated PostgresConnection, _ session: Int32?) throws(PostgresError) {
        // Through a transaction pooler the number is the pooler's, not a server process's.
        guard let session, c.route == .direct else { return }
        for row in try c.query(Recovery.fence, [Int(session)]) where try !row.decode("ended", as: Bool.self) {
            throw PostgresError(.connectionClosed, "the broken session (server process \(session)) is still running")
        }
    }

    /// The recovery's statements (kept apart from `StepStatements`, which the benchmark's SQL floor
    /// mirrors: they are not on the step path).
    enum Recovery {
        /// Ends server process $1 if it still exists, whatever its state (`idle` may be out of date:
        /// the state changes only once the process reads the next request), waiting up to 5 s; no
        /// row when it is gone. Only the same role's client sessions qualify, never this one. (A pid
        /// reused within the moment since the break would be ended too: a client of the same role,
        /// which reconnects.)
        static let fence = PreparedStatement(
            """
            SELECT pg_terminate_backend(pid, 5000) AS ended FROM pg_stat_activity
             WHERE pid = $1::integer AND pid <> pg_backend_pid() AND usename = current_user
               AND backend_type = 'client backend'
            """)

        /// One row: the step's attempts when its current transition is the claim with metadata $2,
        /// else NULL.
        static let claimedBy = PreparedStatement(
            """
            SELECT (SELECT ws.attempts FROM tasker.workflow_step_transitions t
                      JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = t.workflow_step_uuid
                     WHERE t.workflow_step_uuid = $1 AND t.most_recent AND t.to_state = 'in_progress'
                       AND t.metadata = $2::jsonb) AS attempts
            """)

        /// Whether the step has the transition to $2 with metadata $3 (current or not: orchestration
        /// may have moved the step on since).
        static let storedAs = PreparedStatement(
            """
            SELECT EXISTS (SELECT 1 FROM tasker.workflow_step_transitions
                            WHERE workflow_step_uuid = $1 AND to_state = $2 AND metadata = $3::jsonb) AS stored
            """)
    }
}

extension PostgresConnectionPool {
    /// Runs `body` on a connection until the database answers, waiting `backoff` between failures
    /// (a lost answer must be resolved, not guessed). Returns nil when `RetrySchedule` gives up.
    func askUntilAnswered<T: Sendable>(
        _ what: String, backoff: ReconnectBackoff, logger: Logger,
        _ body: @escaping @Sendable (isolated PostgresConnection) throws(PostgresError) -> T
    ) async -> T? {
        var schedule = RetrySchedule(backoff: backoff)
        while true {
            do {
                return try await withConnection { c in try await body(c) }
            } catch {
                guard let delay = schedule.failed(error) else { return nil }
                logger.warning(
                    "could not learn \(what); asking again",
                    metadata: [
                        "error": "\(error)", "attempt": "\(schedule.failures)", "retry_in": "\(delay)",
                    ])
                try? await Task.sleep(for: delay)
            }
        }
    }
}

/// When to try a database operation again: `backoff` between failures; give up once the pool is
/// shut down, or after 20 more failures once the task is cancelled (a forced shutdown: the sleeps
/// then return at once). One policy for every "until it is done" loop of the step path.
struct RetrySchedule {
    private var attempts: RetryAttempts
    private var failuresSinceCancelled = 0

    init(backoff: ReconnectBackoff) { attempts = RetryAttempts(backoff: backoff) }

    /// Failures so far.
    var failures: Int { attempts.failures }

    /// Records a failure: the delay before the next attempt, or nil to give up.
    mutating func failed(_ error: any Error) -> Duration? {
        let delay = attempts.failed()
        if let error = error as? PostgresError, error.kind == .shutdown { return nil }
        if Task.isCancelled {
            failuresSinceCancelled += 1
            if failuresSinceCancelled >= 20 { return nil }
        }
        return delay
    }
}
