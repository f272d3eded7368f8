import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// SIGTERM while PostgreSQL is unreachable (the worker's connections go through a proxy that then
/// black-holes everything: no answer, no reset, as a dead host or a dropped route) ends the real
/// binary within the drain deadline plus a few seconds: past `WorkerDaemon.gracefulShutdownLimit`
/// what is left is cancelled, and every database wait honours cancellation.
@Suite("Shutdown with the database unreachable", .timeLimit(.minutes(2)))
struct UnreachableDatabaseShutdownTests {
    static let yaml = """
        name: unreachable
        namespace_name: unreachable
        version: 1.0.0
        steps:
          - name: nap
            handler: { callable: tasker.sleep, initialization: { ms: 20000 } }
        """

    @Test func sigtermWithTheDatabaseBlackHoledExitsInBoundedTime() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let proxy = try AnswerLosingProxy(databaseURL: db.url)
            defer { proxy.close() }
            let drainSeconds = 2
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cfg-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let file = directory.appendingPathComponent("worker.toml")
            try """
            [common.database]
            url = "\(proxy.url)"
            connect_timeout_seconds = 2

            [common.database.pool]
            min_connections = 1

            [worker.event_systems.worker.timing]
            processing_timeout_seconds = \(drainSeconds)

            [worker.web]
            bind_address = "127.0.0.1:0"

            [worker.grpc]
            bind_address = "127.0.0.1:0"
            """.write(to: file, atomically: true, encoding: .utf8)
            let tasks = try await harness.createSingleStepTasks(count: 2, step: "nap")
            let worker = try WorkerProcess(
                ["run"], db: db, templatePath: harness.templateDirectory, environment: ["TASKER_CONFIG_PATH": file.path])
            defer { worker.kill() }
            try await harness.waitForWorkersReady(1, mode: .hybrid)
            try await harness.enqueueBatch(tasks, "nap")
            try await waitUntil(timeout: .seconds(20)) { try await harness.countSteps(in: ["in_progress"]) >= 1 }

            // The database becomes unreachable: handlers are running, their results cannot be stored.
            proxy.blackHole()
            let signalled = ContinuousClock.now
            let limit = Duration.seconds(drainSeconds) + WorkerDaemon.shutdownMargin
            let exited = try await worker.terminate(within: limit + .seconds(20))
            let took = signalled.duration(to: .now)
            guard exited else {
                worker.kill()
                Issue.record("no exit within \(limit + .seconds(20)) of SIGTERM:\n\(worker.log.suffix(4000))")
                return
            }
            print("exit after SIGTERM with the database unreachable: \(took) (drain deadline \(drainSeconds) s)")
            #expect(took < limit + .seconds(5), "exit took \(took)")
            #expect(worker.log.contains("graceful shutdown did not finish within its limit"), "\(worker.log.suffix(4000))")
            // A forced shutdown is not a clean exit: non-zero, with the reason as the last word.
            #expect(worker.process.terminationStatus != 0)
            #expect(worker.log.contains("graceful shutdown exceeded its limit of 7 s"), "\(worker.log.suffix(4000))")
        }
    }
}
