import Foundation

/// When each step of a dead-looking worker was first seen by the scan, so that a step is recovered
/// only once its worker's lease has been seen expired, scan after scan, for `grace`
/// (`LivenessTiming.absenceWait`). The lease's expiry alone is not enough: while PostgreSQL was down
/// or restarting every lease expired by its clock, and the live workers need a moment to renew
/// theirs once it is back. Pure; bounded by the scan's limit (entries not seen in the latest scan
/// are dropped). A new tracker (a freshly started scanner) knows nothing, so it waits a full
/// `grace` before it recovers anything; a failed scan forgets everything.
struct AbsenceTracker: Sendable {
    let grace: Duration
    /// First sighting of each `in_progress` transition whose worker's lease was expired.
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

    /// Forgets every sighting (a scan failed: whether the leases stayed expired meanwhile is unknown).
    mutating func reset() { firstSeen = [:] }
}
