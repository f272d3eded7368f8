import Foundation

/// When each step of a dead-looking worker was first seen by the scan, so that a step is recovered
/// only once its worker's lock has been absent for the whole grace period (a worker reconnecting
/// its liveness connection is not dead). Pure; bounded by the scan's limit (entries not seen in
/// the latest scan are dropped). A new tracker (a freshly started scanner) knows nothing, so it
/// waits a full grace period before it recovers anything.
struct AbsenceTracker: Sendable {
    let grace: Duration
    /// First sighting of each `in_progress` transition whose worker's lock was absent.
    private(set) var firstSeen: [UUID: ContinuousClock.Instant] = [:]

    init(grace: Duration) {
        self.grace = grace
    }

    /// Records one scan's `steps` at `now`; returns those seen absent for at least `grace`.
    mutating func observe(_ steps: [LostWorkerStep], at now: ContinuousClock.Instant) -> [LostWorkerStep] {
        var seen: [UUID: ContinuousClock.Instant] = [:]
        var due: [LostWorkerStep] = []
        for step in steps {
            let first = firstSeen[step.transitionUUID] ?? now
            seen[step.transitionUUID] = first
            if first.duration(to: now) >= grace { due.append(step) }
        }
        firstSeen = seen
        return due
    }

    /// Forgets every sighting (a scan failed: whether the locks stayed absent meanwhile is unknown).
    mutating func reset() { firstSeen = [:] }
}
