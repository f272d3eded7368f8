import Foundation
import Testing

@testable import TaskerWorker

/// The deadlines the health checks answer within (`Support/Deadline`): `withDeadline` answers on time
/// whatever the operation does, and `firstOutcome` is the one race behind it. (The health service on a
/// running worker: `HealthServiceTests` in TaskerSystemTests.)
@Suite("Health check deadlines", .timeLimit(.minutes(3)))
struct DeadlineTests {
    @Test
    func aDeadlineAnswersOnTimeEvenWhenTheOperationIgnoresCancellation() async throws {
        let started = ContinuousClock.now
        let outcome = await withDeadline(.milliseconds(100)) { () async -> Int in
            // Not cancellable: resumes only after 30 s, whatever happens to the task.
            await withCheckedContinuation { continuation in
                DispatchQueue.global().asyncAfter(deadline: .now() + 30) { continuation.resume(returning: 1) }
            }
        }
        guard case .timedOut = outcome else {
            Issue.record("expected a timeout, got \(outcome)")
            return
        }
        // The answer does not wait for the operation (generous bound: machines under load are slow).
        #expect(ContinuousClock.now - started < .seconds(15))

        guard case .value(7) = await withDeadline(.seconds(5), { 7 }) else {
            Issue.record("a fast operation's value was lost")
            return
        }
        struct Boom: Error {}
        guard case .failed(let error) = await withDeadline(.seconds(5), { () throws -> Int in throw Boom() }) else {
            Issue.record("a failing operation's error was lost")
            return
        }
        #expect(error is Boom)
    }

    /// The one deadline race (`firstOutcome`, behind `withDeadline` and the handler dispatch's
    /// timeout/drain race): the first contender with an outcome wins, one without (nil) does not,
    /// and a cancelled caller gets `onCancel` without waiting for contenders that ignore it.
    @Test
    func theFirstOutcomeWinsAndACancelledRaceAnswersAtOnce() async throws {
        let slow: @Sendable () async -> Int? = {
            await withCheckedContinuation { continuation in
                DispatchQueue.global().asyncAfter(deadline: .now() + 30) { continuation.resume(returning: 1) }
            }
        }
        #expect(await firstOutcome(onCancel: -1, of: [slow, { nil }, { 2 }]) == 2)
        let started = ContinuousClock.now
        let race = Task { await firstOutcome(onCancel: -1, of: [slow, { nil }]) }
        race.cancel()
        #expect(await race.value == -1)
        #expect(ContinuousClock.now - started < .seconds(15))
    }
}
