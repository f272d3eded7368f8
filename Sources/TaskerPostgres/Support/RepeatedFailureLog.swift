import Logging
import Synchronization

/// A failure that repeats for as long as the database is down (a lease renewal every half second, a
/// connection attempt every few seconds): its first occurrence is logged at once, the next ones at
/// most once per `interval`, each line saying how often it failed since the last one and, when the
/// database does not accept connections, why the process keeps trying and what to check. A worker
/// left running after its database stopped (`scripts/dev` stops its PostgreSQL on exit) writes one
/// explained line per interval, not three unexplained lines a second.
package final class RepeatedFailureLog: Sendable {
    private let throttle: Throttle
    private let interval: Duration
    private let unlogged = Atomic<Int>(0)

    package init(interval: Duration = .seconds(30)) {
        self.interval = interval
        throttle = Throttle(interval: interval)
    }

    /// Records one failure; logs it when the interval allows, with `failures_since_last_line`.
    package func failed(
        _ logger: Logger, _ message: @autoclosure () -> Logger.Message, error: any Error, level: Logger.Level = .warning,
        metadata: Logger.Metadata = [:]
    ) {
        let count = unlogged.add(1, ordering: .relaxed).newValue
        guard throttle.allow() else { return }
        unlogged.subtract(count, ordering: .relaxed)
        var metadata = metadata
        metadata["error"] = "\(error)"
        metadata["failures_since_last_line"] = "\(count)"
        if let hint = Self.hint(for: error, interval: interval) { metadata["hint"] = "\(hint)" }
        logger.log(level: level, message(), metadata: metadata)
    }

    /// The operation succeeded again: returns the failures recorded and not logged since the last line
    /// (the caller may log the recovery with it) and starts afresh, so the next outage's first failure
    /// is logged at once.
    @discardableResult
    package func recovered() -> Int {
        throttle.reset()
        return unlogged.exchange(0, ordering: .relaxed)
    }

    /// What to check when `error` says the database does not accept connections; nil otherwise.
    package static func hint(for error: any Error, interval: Duration) -> String? {
        guard let error = error as? PostgresError, error.kind == .connectionFailed else { return nil }
        return "the database does not accept connections: is PostgreSQL running at this address (scripts/dev stops "
            + "its PostgreSQL when it exits)? This process claims nothing meanwhile and keeps retrying until the "
            + "database is back or it gets SIGTERM; this line repeats at most every \(interval)"
    }
}
