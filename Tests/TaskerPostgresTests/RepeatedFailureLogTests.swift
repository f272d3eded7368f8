import Logging
import Synchronization
import Testing

@testable import TaskerPostgres

/// Issue #31 item 7: a worker left running after its database stopped logged three unexplained lines
/// a second (a lease renewal every half second, the pool's opens). A repeated failure is now logged
/// once per interval, with how often it happened since and, for a database that refuses
/// connections, what to check.
@Suite("Repeated failures logged once per interval")
struct RepeatedFailureLogTests {
    final class Lines: Sendable {
        let lines = Mutex<[(message: String, metadata: Logger.Metadata)]>([])
    }

    struct Collector: LogHandler {
        let sink: Lines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            sink.lines.withLock { $0.append(("\(event.message)", event.metadata ?? [:])) }
        }
    }

    @Test func theFirstFailureIsLoggedAndTheRestCountedUntilTheInterval() {
        let sink = Lines()
        let logger = Logger(label: "test") { _ in Collector(sink: sink) }
        let log = RepeatedFailureLog(interval: .seconds(3600))
        let refused = PostgresError(.connectionFailed, "connection to server at \"127.0.0.1\" failed: Connection refused")
        for _ in 0..<100 { log.failed(logger, "could not renew the liveness lease", error: refused) }
        let lines = sink.lines.withLock { $0 }
        #expect(lines.count == 1)
        #expect(lines.first?.message == "could not renew the liveness lease")
        #expect(lines.first?.metadata["failures_since_last_line"] == "1")
        #expect("\(lines.first?.metadata["hint"] ?? "")".contains("is PostgreSQL running"))
        #expect(log.recovered() == 99)
        #expect(log.recovered() == 0)
        // After a recovery, the next outage's first failure is logged at once.
        log.failed(logger, "could not renew the liveness lease", error: refused)
        #expect(sink.lines.withLock { $0.count } == 2)
    }

    @Test func anIntervalOfZeroLogsEveryFailureAndOnlyConnectionFailuresGetTheHint() {
        let sink = Lines()
        let logger = Logger(label: "test") { _ in Collector(sink: sink) }
        let log = RepeatedFailureLog(interval: .zero)
        log.failed(logger, "a", error: PostgresError(.server, "duplicate key"))
        log.failed(logger, "b", error: PostgresError(.connectionFailed, "refused"))
        let lines = sink.lines.withLock { $0 }
        #expect(lines.map(\.message) == ["a", "b"])
        #expect(lines[0].metadata["hint"] == nil && lines[1].metadata["hint"] != nil)
        #expect(lines.allSatisfy { $0.metadata["failures_since_last_line"] == "1" })
    }
}
