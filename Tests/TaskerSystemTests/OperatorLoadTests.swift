import Foundation
import HTTPTypes
import HummingbirdTesting
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerWorker

/// Issue #11 item 1: a flood of health probes must neither grow the pool past its maximum nor starve
/// the step pipeline. Probes share one single-flight evaluation (`HealthProbeCache`) and reach the
/// database through the pool's small operator lane.
@Suite("Operator surface under load", .timeLimit(.minutes(3)))
struct OperatorLoadTests {
    static let yaml = """
        name: flooded
        namespace_name: flooded
        version: 1.0.0
        steps:
          - name: work
            handler: { callable: tasker.noop }
        """

    /// What the flood asks for: health probes (one shared evaluation per second), or templates that
    /// do not exist (never cached: every request is a database look-up, on the operator lane).
    enum Flood: String, CaseIterable, Sendable { case healthProbes, unknownTemplates }

    @Test(arguments: Flood.allCases)
    func aFloodOfOperatorRequestsKeepsWithinThePoolAndStepsStillComplete(_ kind: Flood) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            var configuration = harness.configuration()
            let max = 6
            configuration.common.database.pool.maxConnections = max
            configuration.worker.web.databasePools.operatorMaxConnections = 2
            let worker = harness.startWorker(.withBuiltIns(), configuration: configuration)
            try await waitUntil(timeout: .seconds(20)) { worker.daemon.boundAddresses.web != nil }
            let runtime = worker.daemon.runtime
            let address = try #require(worker.daemon.boundAddresses.web)
            let colon = try #require(address.lastIndex(of: ":"))
            let host = String(address[..<colon])
            let port = try #require(Int(address[address.index(after: colon)...]))

            // PostgreSQL's count of the pool's backends, and the operator lane's share, sampled throughout.
            let watcher = Task {
                var highest = (backends: 0, operatorLane: 0)
                while !Task.isCancelled {
                    let rows = try await harness.admin.query(
                        """
                        SELECT count(*)::int AS n FROM pg_stat_activity
                         WHERE datname = current_database() AND application_name = 'tasker-worker'
                        """)
                    highest.backends = Swift.max(highest.backends, try rows[0].decode("n", as: Int.self))
                    highest.operatorLane = Swift.max(highest.operatorLane, await runtime.pool.statistics.operatorActive)
                }
                return highest
            }
            let answered = Tally()
            let flood = Task {
                await withTaskGroup(of: Void.self) { group in
                    for client in 0..<24 {
                        group.addTask {
                            try? await TestClient.withClient(host: host, port: port) { http in
                                var n = 0
                                while !Task.isCancelled {
                                    n += 1
                                    let path =
                                        switch kind {
                                        case .healthProbes: client % 2 == 0 ? "/health/detailed" : "/health/ready"
                                        case .unknownTemplates: "/v1/templates/flooded/missing_\(client)_\(n)/1.0.0"
                                        }
                                    _ = try await http.execute(TestClient.Request(path, method: .get))
                                    answered.increment()
                                }
                            }
                        }
                    }
                }
            }
            let floodStart = ContinuousClock.now
            let before = await runtime.pool.statistics.operatorAcquires
            try await waitUntil(timeout: .seconds(90)) { answered.count >= 200 }

            // Steps run while the flood goes on.
            var tasks: [PipelineHarness.SeededTask] = []
            for _ in 0..<8 {
                let task = try await harness.createTask(steps: ["work"])
                try await harness.enqueue(task, "work")
                tasks.append(task)
            }
            for task in tasks {
                try await harness.waitForState(task["work"], ["enqueued_for_orchestration"], timeout: .seconds(30))
            }
            let duringSteps = answered.count
            try await waitUntil(timeout: .seconds(90)) { answered.count >= duringSteps + 200 }
            flood.cancel()
            await flood.value
            let requests = answered.count
            let seconds = Int((ContinuousClock.now - floodStart).components.seconds) + 1
            watcher.cancel()
            let highest = try await watcher.value
            let stats = await runtime.pool.statistics
            #expect(highest.backends <= max, "PostgreSQL saw \(highest.backends) pool backends, max \(max)")
            #expect(highest.operatorLane <= 2)
            #expect(stats.peakConnections <= max)
            let operatorAcquires = stats.operatorAcquires - before
            switch kind {
            case .healthProbes:
                // One shared evaluation (two operator queries) per second at most, however many probes.
                #expect(
                    operatorAcquires <= 2 * (seconds + 1), "\(operatorAcquires) operator acquires for \(requests) probes in \(seconds) s")
            case .unknownTemplates:
                // Every look-up of a template that does not exist went to the database on the
                // operator lane (at most 2 at once), never on the pipeline's connections.
                #expect(operatorAcquires >= requests - 24, "\(operatorAcquires) operator acquires for \(requests) template requests")
            }
            #expect(requests >= 400)
            try await worker.stop()
        }
    }
}
