/// `tasker.dlq_resolution_status`: where a DLQ investigation stands (upstream `DlqResolutionStatus`).
/// The database spells it in snake_case (`manually_resolved`); upstream's JSON in serde's spelling of
/// the Rust variant (`ManuallyResolved`), which the task API answers with. Requests may use either.
enum DLQResolutionStatus: String, Sendable, CaseIterable {
    case pending
    case manuallyResolved = "manually_resolved"
    case permanentlyFailed = "permanently_failed"
    case cancelled

    /// serde's spelling (`Pending`, `ManuallyResolved`, `PermanentlyFailed`, `Cancelled`).
    var serdeName: String {
        switch self {
        case .pending: "Pending"
        case .manuallyResolved: "ManuallyResolved"
        case .permanentlyFailed: "PermanentlyFailed"
        case .cancelled: "Cancelled"
        }
    }

    /// The status spelled either way; nil for anything else.
    init?(spelledEitherWay text: String) {
        guard let status = Self.allCases.first(where: { $0.rawValue == text || $0.serdeName == text }) else { return nil }
        self = status
    }

    /// A refusal's list of the accepted spellings.
    static var accepted: String {
        allCases.map { "\($0.serdeName) (\($0.rawValue))" }.joined(separator: ", ")
    }
}

/// `tasker.dlq_reason`: why a task was sent to the DLQ (upstream `DlqReason`), answered in serde's
/// spelling (`StalenessTimeout`).
enum DLQReason: String, Sendable, CaseIterable {
    case stalenessTimeout = "staleness_timeout"
    case maxRetriesExceeded = "max_retries_exceeded"
    case dependencyCycleDetected = "dependency_cycle_detected"
    case workerUnavailable = "worker_unavailable"
    case manualDLQ = "manual_dlq"

    /// serde's spelling of the variant.
    var serdeName: String {
        switch self {
        case .stalenessTimeout: "StalenessTimeout"
        case .maxRetriesExceeded: "MaxRetriesExceeded"
        case .dependencyCycleDetected: "DependencyCycleDetected"
        case .workerUnavailable: "WorkerUnavailable"
        case .manualDLQ: "ManualDlq"
        }
    }
}
