import Foundation
import Logging

/// Lost answers. A claim or a completion is one transaction sent in one round trip; when the
/// connection breaks after the server got the `COMMIT` (a terminated backend, a failover, a cut
/// network), the worker cannot tell from the error whether it took effect
/// (`PostgresError.leavesOutcomeUnknown`). Guessing either way loses a step: retrying a claim that
/// committed finds the step `in_progress` with nobody to run it; retrying a completion that
/// committed finds the step moved on and drops its domain events.
///
/// So the worker asks. Every transition it writes carries metadata it made itself, with a
/// microsecond timestamp (the completion's also its worker uuid and the whole result), and that
/// metadata is kept for the retry: the transition with exactly that metadata is there if and only
/// if the attempt committed. Before asking, the broken session is fenced: if its server process
/// is still running (the client noticed the break first), it is terminated and waited for, so it
/// cannot commit after the answer was read. The metadata is the one upstream writes; nothing is
/// added to the wire.
extension StepRepository {
    /// The claim's transition metadata (upstream's `Start` event); `now` is the attempt's identity.
    static func claimMetadata(now: Date) -> String {
        #"{"event":"{\"type\":\"Start\"}","timestamp":"\#(RFC3339.string(now))"}"#
    }

    /// After a claim of `requests` with metadata time `now` failed with an unknown outcome: what
    /// it did, read on a fresh connection. A request whose step carries that claim is `.claimed`
    /// (with the step's attempts); the others are `.notClaimable` with their current state, as the
    /// claim would have reported them. When no request shows the claim, the transaction did not
    /// commit. `session` is the broken connection's server process (fenced first).
    public static func findClaims(_ c: isolated PostgresConnection, _ requests: [ClaimRequest], now: Date,
                                  session: Int32?) throws(PostgresError) -> [ClaimAttempt] {
        let metadata = PostgresJSON(raw: claimMetadata(now: now))
        var statements = [fenceStatement(session)]
        for request in requests {
            if let taskUUID = request.taskUUID {
                statements.append(.prepared(StepStatements.hydrate, [request.stepUUID, taskUUID]))
            }
            statements.append(.prepared(Recovery.claimedBy, [request.stepUUID, metadata]))
        }
        let results = try c.pipeline(statements)
        try checkFence(results[0], session)
        var index = 1
        var attempts: [ClaimAttempt] = []
        for request in requests {
            var hydrated: Result<HydratedStep?, PostgresError> = .success(nil)
            if request.taskUUID != nil {
                let rows = results[index]
                hydrated = Result { () throws(PostgresError) -> HydratedStep? in try rows.first.map(HydratedStep.init(row:)) }
                index += 1
            }
            let claimed = try results[index].first?.decode("attempts", as: Int.self)
            index += 1
            attempts.append(ClaimAttempt(hydrated: hydrated, claim: claimed.map { .claimed(attempts: $0) } ?? .notClaimable))
        }
        return attempts
    }

    /// After a completion `write` failed with an unknown outcome (or a retry found the step no
    /// longer `in_progress`): whether an earlier attempt stored it. `session` as in `findClaims`.
    public static func isStored(_ c: isolated PostgresConnection, _ write: CompletionWrite,
                                session: Int32?) throws(PostgresError) -> Bool {
        let results = try c.pipeline([
            fenceStatement(session),
            .prepared(Recovery.storedAs, [write.stepUUID, write.toState, PostgresJSON(raw: write.metadata)]),
        ])
        try checkFence(results[0], session)
        return try results[1][0].decode("stored")
    }

    private static func fenceStatement(_ session: Int32?) -> PipelineStatement {
        .prepared(Recovery.fence, [session.map(Int.init)])
    }

    /// The fence found the old session still running and could not end it in time: ask again later.
    private static func checkFence(_ rows: PostgresQueryResult, _ session: Int32?) throws(PostgresError) {
        for row in rows where try !row.decode("ended", as: Bool.self) {
            throw PostgresError(.connectionClosed, "the broken session (server process \(session ?? 0)) is still running")
        }
    }

    /// The recovery's statements (kept apart from `StepStatements`, which the benchmark's SQL floor
    /// mirrors: they are not on the step path).
    enum Recovery {
        /// Ends the broken session's server process if it is still inside a statement or a
        /// transaction, waiting up to 5 s; no row when it is gone or idle (its transaction ended).
        /// $1 its pid (NULL: unknown, nothing to fence). Only the same role's sessions qualify.
        static let fence = PreparedStatement("""
            SELECT pg_terminate_backend(pid, 5000) AS ended FROM pg_stat_activity
             WHERE pid = $1::integer AND usename = current_user AND state IS DISTINCT FROM 'idle'
            """)

        /// The step's attempts when its current transition is the claim with metadata $2.
        static let claimedBy = PreparedStatement("""
            SELECT ws.attempts FROM tasker.workflow_step_transitions t
              JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = t.workflow_step_uuid
             WHERE t.workflow_step_uuid = $1 AND t.most_recent AND t.to_state = 'in_progress'
               AND t.metadata = $2::jsonb
            """)

        /// Whether the step has the transition to $2 with metadata $3 (current or not: orchestration
        /// may have moved the step on since).
        static let storedAs = PreparedStatement("""
            SELECT EXISTS (SELECT 1 FROM tasker.workflow_step_transitions
                            WHERE workflow_step_uuid = $1 AND to_state = $2 AND metadata = $3::jsonb) AS stored
            """)
    }
}

extension PostgresConnectionPool {
    /// Runs `body` on a connection until the database answers, waiting `backoff` between failures
    /// (a lost answer must be resolved, not guessed). Once the task is cancelled it makes at most
    /// 20 more attempts, then returns nil.
    func askUntilAnswered<T: Sendable>(
        _ what: String, backoff: ReconnectBackoff, logger: Logger,
        _ body: @escaping @Sendable (isolated PostgresConnection) throws(PostgresError) -> T
    ) async -> T? {
        var attempt = 0
        while true {
            do {
                return try await withConnection { c in try await body(c) }
            } catch {
                attempt += 1
                if Task.isCancelled && attempt >= 20 { return nil }
                let delay = backoff.delay(forAttempt: attempt - 1)
                logger.warning("could not learn \(what); asking again", metadata: [
                    "error": "\(error)", "attempt": "\(attempt)", "retry_in": "\(delay)"])
                try? await Task.sleep(for: delay)
            }
        }
    }
}
