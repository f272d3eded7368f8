import Logging
import TaskerTestSupport
import Testing

@testable import TaskerWorker

/// Readiness under a loaded machine: one round-trip check that merely timed out keeps the previous
/// verdict for one evaluation (`HealthProbeCache.settle`); a second timeout in a row, or an error,
/// counts. Changes of readiness are logged with the failing checks (`ReadinessTransitions`).
/// Pure: no database, no clock.
@Suite("Readiness settles one slow answer")
struct HealthProbeSettleTests {
    static let healthy = HealthCheck(status: .healthy, message: "Database connection successful", durationMs: 1)
    static let slow = HealthCheck.timedOut("Database did not answer SELECT 1 within 2.0 seconds", durationMs: 2000)
    static let refused = HealthCheck(status: .unhealthy, message: "Database connection failed: database unavailable", durationMs: 3)

    static func probes(database: HealthCheck, queues: HealthCheck = healthy) -> HealthProbes {
        HealthProbes(database: database, commandProcessor: healthy, queueProcessing: queues, status: nil)
    }

    @Test("a single timeout after a healthy answer keeps healthy; the next timeout counts")
    func oneTimeoutIsSettledTwoAreNot() {
        let cache = HealthProbeCache()
        #expect(cache.settle(Self.probes(database: Self.healthy)).database.verdict == .healthy)
        let first = cache.settle(Self.probes(database: Self.slow))
        #expect(first.database.verdict == .healthy)
        #expect(first.database.message?.contains("did not answer SELECT 1") == true)
        #expect(first.database.message?.contains("the previous answer stands") == true)
        #expect(first.database.durationMs == 2000)
        let second = cache.settle(Self.probes(database: Self.slow))
        #expect(second.database.verdict == .unhealthy)
        #expect(second.database.message == Self.slow.message)
        // Recovered, then slow once more: settled again.
        #expect(cache.settle(Self.probes(database: Self.healthy)).database.verdict == .healthy)
        #expect(cache.settle(Self.probes(database: Self.slow)).database.verdict == .healthy)
    }

    @Test("an error counts at once; a first evaluation that times out counts too")
    func errorsAndFirstTimeoutsCount() {
        let cache = HealthProbeCache()
        #expect(cache.settle(Self.probes(database: Self.slow)).database.verdict == .unhealthy)
        let other = HealthProbeCache()
        _ = other.settle(Self.probes(database: Self.healthy))
        #expect(other.settle(Self.probes(database: Self.refused)).database.verdict == .unhealthy)
    }

    @Test("each check settles on its own: a degraded queue depth stays degraded through one timeout")
    func checksSettleIndependently() {
        let cache = HealthProbeCache()
        let depth = HealthCheck(status: .degraded, message: "Own queues total depth: 12000", durationMs: 4)
        let queuesSlow = HealthCheck.timedOut("Queue metrics not read within 2.0 seconds", durationMs: 2000)
        _ = cache.settle(Self.probes(database: Self.healthy, queues: depth))
        let settled = cache.settle(Self.probes(database: Self.refused, queues: queuesSlow))
        #expect(settled.queueProcessing.verdict == .degraded)
        #expect(settled.database.verdict == .unhealthy)
    }

    @Test("readiness changes are logged once each, naming the failing checks")
    func transitionsAreLogged() {
        let capture = LogCapture()
        let transitions = ReadinessTransitions(
            logger: Logger(label: "tasker.health") { WorkerLogHandler(label: $0, output: capture.output, format: .text, level: .info) })
        let ready = WorkerReadinessChecks(database: Self.healthy, commandProcessor: Self.healthy, queueProcessing: Self.healthy)
        var failing = ready
        failing.database = Self.refused
        for checks in [ready, ready, failing, failing, ready] { transitions.record(checks) }
        let lines = capture.all
        #expect(lines.count == 3, "\(lines)")
        #expect(lines.first?.contains("info tasker.health: worker is ready") == true, "\(lines)")
        #expect(lines.dropFirst().first?.contains("warning tasker.health: worker is not ready") == true, "\(lines)")
        #expect(
            lines.dropFirst().first?.contains("database=unhealthy: Database connection failed: database unavailable") == true, "\(lines)")
        #expect(lines.last?.contains("worker is ready was=not_ready") == true, "\(lines)")
    }
}
