import Foundation
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Crash recovery's rules without a database: a step is recovered only after its worker's absence
/// lasted the wait, the worker claims nothing without its liveness lease, the recovery write is the
/// result statement with a compare-and-set, and `[worker.crash_recovery]`'s defaults and validation.
/// (Against the real PostgreSQL: `CrashRecoveryTests` in TaskerSystemTests.)
@Suite("Crash recovery rules", .timeLimit(.minutes(3)))
struct CrashRecoveryRuleTests {
    /// A step is recovered only after its worker's lease has been seen expired for the absence wait;
    /// a fresh tracker knows nothing, and a step missing from a scan is forgotten.
    @Test func absenceMustLastTheWait() throws {
        var tracker = AbsenceTracker(grace: .seconds(4))
        let step = LostWorkerStep(
            transitionUUID: UUID(), stepUUID: UUID(), taskUUID: UUID(), correlationID: UUID(), workerUUID: UUID())
        let start = ContinuousClock.now
        #expect(tracker.observe([step], at: start).isEmpty)
        #expect(tracker.observe([step], at: start + .seconds(3)).isEmpty)
        #expect(tracker.observe([step], at: start + .seconds(4)) == [step])
        #expect(tracker.observe([], at: start + .seconds(5)).isEmpty)
        #expect(tracker.firstSeen.isEmpty)
        #expect(tracker.observe([step], at: start + .seconds(6)).isEmpty)
        tracker.reset()
        #expect(tracker.observe([step], at: start + .seconds(9)).isEmpty)
    }

    /// Without its liveness lease the worker claims nothing; held again, the queues are read at once.
    @Test func noClaimsWithoutTheLivenessLease() {
        var state = WorkerCapacityState(permits: 4, shedding: .disabled, requiresLiveness: true)
        #expect(state.remainingClaims == 0)
        let refused = state.admitClaim(step: UUID(), message: 1)
        #expect(refused == .shed)
        let notified = state.admitNotification()
        #expect(notified == false)
        let regained = state.setLiveness(true)
        #expect(regained)
        #expect(state.remainingClaims == nil)
        let admitted = state.admitClaim(step: UUID(), message: 2)
        #expect(admitted == .admitted(warningUsage: nil))
        let lost = state.setLiveness(false)
        #expect(lost == false)
        let refusedAgain = state.admitClaim(step: UUID(), message: 3)
        #expect(refusedAgain == .shed)
        #expect(WorkerCapacityState(permits: 4, shedding: .disabled).remainingClaims == nil)
    }

    /// The recovery write is the result statement retiring the lost claim it saw, while that claim's
    /// worker has no lease (built by the same `ResultStatement`, so the two cannot drift apart).
    @Test func recoveryStatementIsTheResultWithACompareAndSet() {
        let recover = ResultStatement.recoverFunctions.statement
        #expect(recover.parameters.prefix(6) == ["step_uuid", "to_state", "metadata", "results", "transition_uuid", "worker_uuid"])
        #expect(recover.sql.contains("workflow_step_transition_uuid = $5::uuid"))
        #expect(recover.sql.contains("lease.worker_uuid = $6::uuid AND lease.expires_at > clock_timestamp()"))
    }

    @Test func configurationDefaultsAndValidation() throws {
        let defaults = WorkerConfiguration.CrashRecovery()
        #expect(defaults.enabled && defaults.scanIntervalMs == 2000 && defaults.gracePeriodMs == 4000)
        #expect(defaults.scanIntervalMs + defaults.gracePeriodMs < 10_000)
        let (error, file) = try loadError(
            """
            [worker.crash_recovery]
            scan_interval_ms = 0
            grace_period_ms = 10
            stale_in_progress_threshold_seconds = -1
            enabled = "yes"
            """)
        #expect(
            error.issues.map(\.description).sorted() == [
                "\(file): worker.crash_recovery.enabled = \"yes\": wrong type: expected a boolean, found a string",
                "\(file): worker.crash_recovery.grace_period_ms = 10: must be between 1000 and 3600000",
                "\(file): worker.crash_recovery.scan_interval_ms = 0: must be between 100 and 60000",
                "\(file): worker.crash_recovery.stale_in_progress_threshold_seconds = -1: must be between 1 and 604800",
            ])
    }
}
