import Foundation
import Logging
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The pure parts of issue #29: the event system without a LISTEN session, the scanner flag of the
/// lease, the bounded memory of unresolved claims, and the idle statement budget's formula.
@Suite("Fleet scale: pure parts")
struct FleetScaleUnitTests {
    @Test func withoutAListenSessionEveryModeThatListensPolls() {
        var hybrid = WorkerEventSystemSettings(mode: .hybrid, namespaces: ["a"], pollInterval: .milliseconds(700))
        hybrid.pollerEnabled = false
        let polled = hybrid.withoutListener
        #expect(polled.mode == .pollingOnly && polled.usesPoller && !polled.usesListener)
        #expect(polled.pollInterval == .milliseconds(700))
        var eventDriven = WorkerEventSystemSettings(mode: .eventDrivenOnly, namespaces: ["a"], pollerEnabled: false)
        eventDriven.disconnectedPollInterval = .seconds(3)
        #expect(eventDriven.withoutListener.mode == .pollingOnly)
        #expect(eventDriven.withoutListener.pollInterval == .seconds(3))
        #expect(WorkerEventSystemSettings(mode: .disabled, namespaces: []).withoutListener.mode == .disabled)
        #expect(WorkerEventSystemSettings(mode: .pollingOnly, namespaces: []).withoutListener.mode == .pollingOnly)
    }

    @Test func theLatestRenewalDecidesWhetherThisWorkerScans() {
        let start = ContinuousClock.now
        var lease = WorkerLeaseState(duration: .seconds(4))
        #expect(!lease.scanner)
        lease.renewed(sentAt: start + .seconds(1), scanner: true)
        #expect(lease.scanner)
        // A late answer of an older renewal does not undo the newer one's election.
        lease.renewed(sentAt: start, scanner: false)
        #expect(lease.scanner)
        lease.renewed(sentAt: start + .seconds(2), scanner: false)
        #expect(!lease.scanner)
        lease.renewed(sentAt: start + .seconds(3), scanner: true)
        lease.released()
        #expect(!lease.scanner)
    }

    @Test func unresolvedClaimsAreBoundedResolvedAndExpire() {
        let claims = UnresolvedClaims(logger: Logger(label: "test"))
        let start = ContinuousClock.now
        let stamp = ClaimStamp(worker: UUID())
        let steps = (0..<3).map { _ in UUID() }
        claims.remember([], stamp: stamp)
        #expect(claims.count == 0)
        claims.remember(steps, stamp: stamp, at: start)
        #expect(claims.count == 3)
        claims.resolve([steps[0]], stamp: ClaimStamp(worker: UUID()))
        #expect(claims.count == 3, "another claim's stamp resolves nothing")
        claims.resolve([steps[0]], stamp: stamp)
        #expect(claims.take(expiredBefore: start).map(\.steps) == [[steps[1], steps[2]]])
        #expect(claims.take(expiredBefore: start + .seconds(1)).isEmpty, "past the horizon, forgotten")
        // Never more than `capacity` steps: the oldest entries go first.
        for n in 0..<(UnresolvedClaims.capacity / 1000 + 1) {
            claims.remember(
                (0..<1000).map { _ in UUID() }, stamp: ClaimStamp(worker: UUID(), time: Date(timeIntervalSince1970: Double(n))), at: start)
        }
        #expect(claims.count <= UnresolvedClaims.capacity)
    }

    @Test func theIdleBudgetFollowsTheConfiguration() {
        var configuration = TaskerConfiguration()
        configuration.worker.crashRecovery.gracePeriodMs = 4000
        configuration.worker.crashRecovery.scanIntervalMs = 2000
        configuration.worker.eventSystems.worker.metadata.fallbackPoller.pollingIntervalMs = 1000
        let scanner = IdleStatementBudget(configuration: configuration, namespaces: 2, scanner: true)
        #expect(abs(scanner.leaseRenewals - 1.5) < 1e-9)
        #expect(scanner.pollReads == 2 && scanner.recoveryScans == 1, "the turn kept and the scan")
        #expect(abs(scanner.perSecond - 4.5) < 1e-9)
        #expect(IdleStatementBudget(configuration: configuration, namespaces: 2, scanner: false).recoveryScans == 0)
        configuration.worker.eventSystems.worker.deploymentMode = .eventDrivenOnly
        #expect(IdleStatementBudget(configuration: configuration, namespaces: 2, scanner: false).pollReads == 0)
        configuration.common.database.transactionPooler = true
        #expect(IdleStatementBudget(configuration: configuration, namespaces: 2, scanner: false).pollReads == 2, "no LISTEN: it polls")
    }
}
