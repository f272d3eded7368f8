import Foundation
import Logging

/// Stores one step result until it is stored: the same write (same metadata) on every retry, and
/// after an error that lost the answer (`PostgresError.leavesOutcomeUnknown`) the database is asked
/// first whether that write is already stored (`StepRepository.isStored`, which fences the broken
/// session). A blind retry could find the step moved on and drop the result's domain events, or,
/// with the step re-enqueued and claimed by another worker meanwhile, write over that attempt.
/// Used by `CompletionProcessorService` and for the error result of a step that cannot be run.
struct ResultWriter: Sendable {
    let pool: PostgresConnectionPool
    let backoff: ReconnectBackoff
    let logger: Logger

    /// A failed attempt: the error, the attempt number (from 1), and the wait before the next.
    typealias RetryReport = @Sendable (_ error: any Error, _ attempt: Int, _ delay: Duration) -> Void

    /// Writes `write` until stored (`.completed`), found stored by an earlier attempt
    /// (`.storedEarlier`), or refused (`.notInProgress`). `lostAnswer`: the outcome of an earlier
    /// attempt (a failed batch) is unknown. Returns nil when `RetrySchedule` gives up (pool shut
    /// down, or forced shutdown).
    func store(_ write: CompletionWrite, lostAnswer: LostAnswer? = nil,
               onRetry: RetryReport) async -> CompletionOutcome? {
        var lostAnswer = lostAnswer
        var schedule = RetrySchedule(backoff: backoff)
        while true {
            if let lost = lostAnswer {
                lostAnswer = nil
                if await isStored(write, lost) { return .storedEarlier }
            }
            do {
                return try await pool.withConnection { c in try await StepRepository.completeBatch(c, [write])[0] }
            } catch {
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
