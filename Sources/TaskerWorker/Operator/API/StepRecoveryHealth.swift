import Foundation

/// `step_recovery` of `GET /health/detailed` (ours, added next to upstream's fields): whether this
/// worker holds its liveness lease (it claims nothing while it does not), what crash recovery did,
/// and the steps `in_progress` for longer than `worker.crash_recovery.stale_in_progress_threshold_seconds`
/// by claiming worker (`unrecorded`: a worker that records no `worker_uuid`, such as upstream's).
package struct StepRecoveryHealth: Codable, Sendable, Equatable {
    var livenessLeaseHeld: Bool
    var scannerEnabled: Bool
    var stepsRecovered: Int
    var lateResultsRefused: Int
    var inProgressThresholdSeconds: Int
    /// nil when the database did not answer in time.
    var staleInProgressSteps: Int?
    var staleInProgressByWorker: [StaleInProgressSteps]?

    enum CodingKeys: String, CodingKey {
        case livenessLeaseHeld = "liveness_lease_held"
        case scannerEnabled = "scanner_enabled"
        case stepsRecovered = "steps_recovered"
        case lateResultsRefused = "late_results_refused"
        case inProgressThresholdSeconds = "in_progress_threshold_seconds"
        case staleInProgressSteps = "stale_in_progress_steps"
        case staleInProgressByWorker = "stale_in_progress_by_worker"
    }
}
