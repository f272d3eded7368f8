import Foundation
import Synchronization
import TaskerPostgres

/// The results being stored right now, with when their storing began and the last error: readiness
/// fails while one has stayed unstored longer than `worker.result_storage.unstored_alert_seconds`
/// (the database keeps failing), and `/health/detailed` shows it.
package final class ResultStorageMonitor: Sendable {
    private struct Pending {
        let since: ContinuousClock.Instant
        var failures = 0
        var lastError: String?
    }

    private struct State {
        var pending: [Int: Pending] = [:]
        var nextToken = 0
    }

    /// A result this long unstored makes readiness fail.
    let alertAfter: Duration
    private let state = Mutex(State())

    package init(alertAfter: Duration = .seconds(60)) {
        self.alertAfter = alertAfter
    }

    /// What is unstored at one moment.
    package struct Snapshot: Sendable, Equatable {
        /// Results being stored now.
        package var pending: Int
        /// Of them, those unstored for longer than `alertAfter`.
        var overdue: Int
        /// How long the oldest has been unstored.
        package var oldest: Duration
        /// The last error storing the oldest overdue one (kind and SQLSTATE, no server text).
        package var lastError: String?
    }

    /// A result's storing begins; pass the token to `failed` and `stored`.
    package func begin(now: ContinuousClock.Instant = .now) -> Int {
        state.withLock { state in
            let token = state.nextToken
            state.nextToken += 1
            state.pending[token] = Pending(since: now)
            return token
        }
    }

    /// An attempt failed with `error` (and is retried).
    package func failed(_ token: Int, _ error: any Error) {
        let summary = (error as? PostgresError)?.summary ?? String(describing: type(of: error))
        state.withLock { state in
            state.pending[token]?.failures += 1
            state.pending[token]?.lastError = summary
        }
    }

    /// The result is settled (stored, refused, or given up).
    package func stored(_ token: Int) {
        _ = state.withLock { $0.pending.removeValue(forKey: token) }
    }

    /// The unstored results now.
    package func snapshot(now: ContinuousClock.Instant = .now) -> Snapshot {
        state.withLock { state in
            let oldest = state.pending.values.min(by: { $0.since < $1.since })
            let overdue = state.pending.values.filter { $0.since.duration(to: now) > alertAfter }
            return Snapshot(
                pending: state.pending.count, overdue: overdue.count,
                oldest: oldest.map { $0.since.duration(to: now) } ?? .zero,
                lastError: overdue.min(by: { $0.since < $1.since })?.lastError)
        }
    }
}
