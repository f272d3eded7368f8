import Foundation
import Logging
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Stores one step result until it is stored: the same write (same metadata) on every retry, and
/// after an error that lost the answer (`PostgresError.leavesOutcomeUnknown`) the database is asked
/// first whether that write is already stored (`StepRepository.isStored`, which fences the broken
/// session). A blind retry could find the step moved on and drop the result's domain events, or,
/// with the step re-enqueued and claimed by another worker meanwhile, write over that attempt.
///
/// Errors are told apart by SQLSTATE: transient ones are retried (`RetrySchedule`); when the
/// database refuses the data itself (`PostgresError.isPermanentDataError`: a NUL character in
/// `jsonb`, a constraint, a value too large) twice in a row, the step's result is replaced by a
/// non-retryable `result_not_storable` error result saying why (`ResultRefusal`), which is stored
/// instead; if even that is refused, the writer gives up on the step (it stays `in_progress` for
/// orchestration's staleness handling) rather than be occupied forever.
/// The one writer of step results: used by `CompletionProcessorService` (handler results, drain
/// timeouts and FFI results, through the completion channel), for the error result of a step
/// claimed but not runnable (`StepExecutor.failClaimedStep`), and by crash recovery for a dead
/// worker's step (`recovering`: the result statement retiring that lost claim).
struct ResultWriter: Sendable {
    let pool: PostgresConnectionPool
    let backoff: ReconnectBackoff
    let logger: Logger
    /// Static SQL or PGMQ's functions for the completion's send.
    var queueStatements = QueueStatementSelection()

    /// A failed attempt: the error, the attempt number (from 1), and the wait before the next.
    typealias RetryReport = @Sendable (_ error: any Error, _ attempt: Int, _ delay: Duration) -> Void

    /// What `store` did.
    struct Stored: Sendable {
        /// The write's outcome; nil when even the `result_not_storable` result was refused.
        var outcome: CompletionOutcome?
        /// The `result_not_storable` result stored in place of the original (nil: the original).
        var replacement: StepExecutionResult?
        /// Why the original was not stored (set with `replacement`, or when giving up).
        var refusal: ResultRefusal?
    }

    /// How many times in a row the database must refuse the same data before it counts as refused
    /// for good (once more than needed: a constraint violation may come from a race).
    static let refusalsBeforeGivingUp = 2

    /// Writes `write` until stored (`.completed`), found stored by an earlier attempt
    /// (`.storedEarlier`), or refused (`.notInProgress`). `lostAnswer`: the outcome of an earlier
    /// attempt (a failed batch) is unknown. Returns nil when `RetrySchedule` gives up (pool shut
    /// down, or forced shutdown).
    func store(
        _ write: CompletionWrite, lostAnswer: LostAnswer? = nil,
        recovering: (step: LostWorkerStep, statement: ResultStatement)? = nil,
        onRetry: RetryReport
    ) async -> Stored? {
        var write = write
        var lostAnswer = lostAnswer
        var schedule = RetrySchedule(backoff: backoff)
        var stored = Stored()
        var refusals = 0
        while true {
            if let lost = lostAnswer {
                lostAnswer = nil
                if await isStored(write, lost) {
                    stored.outcome = .storedEarlier
                    return stored
                }
            }
            do {
                let attempt = write
                let queues = queueStatements.statements
                stored.outcome = try await pool.withConnection { c in
                    guard let recovering else { return try await StepRepository.completeBatch(c, [attempt], queues: queues)[0] }
                    return try await RecoveryRepository.recover(c, attempt, step: recovering.step, statement: recovering.statement)
                }
                return stored
            } catch {
                if let refusal = ResultRefusal(error) {
                    refusals += 1
                    if refusals >= Self.refusalsBeforeGivingUp {
                        refusals = 0
                        guard stored.replacement == nil, let (replacement, result) = try? write.refused(refusal) else {
                            logger.critical(
                                """
                                the database refused even the error result in place of a refused step result; \
                                the step stays in_progress for orchestration's staleness handling
                                """,
                                metadata: ["step_uuid": "\(write.stepUUID)", "error": "\(error)"])
                            stored.outcome = nil
                            return stored
                        }
                        logger.error(
                            "the database refused a step result for good; storing a result_not_storable error result instead",
                            metadata: ["step_uuid": "\(write.stepUUID)", "reason": "\(refusal.message)"])
                        write = replacement
                        stored.replacement = result
                        stored.refusal = refusal
                        continue
                    }
                } else {
                    refusals = 0
                }
                lostAnswer = LostAnswer(error)
                guard let delay = schedule.failed(error) else { return nil }
                onRetry(error, schedule.failures, delay)
                try? await Task.sleep(for: delay)
            }
        }
    }

    /// Whether the write whose answer was lost is stored (asking until the database answers; false
    /// when stopped first, and the write is then tried again).
    private func isStored(_ write: CompletionWrite, _ lost: LostAnswer) async -> Bool {
        let session = lost.session
        let stored = await pool.askUntilAnswered(
            "whether a result whose answer was lost is stored", backoff: backoff, logger: logger,
            { c throws(PostgresError) in try StepRepository.isStored(c, write, session: session) })
        return stored == true
    }
}

/// An error after which a write's outcome is unknown, with the session it broke on.
struct LostAnswer: Sendable {
    let session: Int32?

    /// nil unless `error` leaves the outcome unknown.
    init?(_ error: any Error) {
        guard let error = error as? PostgresError, error.leavesOutcomeUnknown else { return nil }
        session = error.backendPID
    }
}
