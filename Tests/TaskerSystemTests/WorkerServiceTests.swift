import Foundation
import Logging
import ServiceLifecycle
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The worker is a `Service` built in `init`: an embedding program runs it in its own
/// `ServiceGroup` beside its own services, and `WorkerLauncher` runs the program's services in the
/// worker's group.
@Suite("Worker as a Service", .timeLimit(.minutes(2)))
struct WorkerServiceTests {
    static let yaml = """
        name: embedded
        namespace_name: embedded
        version: 1.0.0
        steps:
          - name: slow
            handler: { callable: test.slow }
        """

    /// A service of the embedding program's own.
    struct ProgramService: Service {
        let body: @Sendable () async throws -> Void
        func run() async throws { try await body() }
    }

    /// Runs until shutdown has begun (`released`), then succeeds: its result is produced while the
    /// worker drains.
    static func handlers(entered: TestFlag, released: TestFlag) -> HandlerRegistry {
        let handlers = HandlerRegistry.withBuiltIns()
        handlers.register("test.slow") { _ in
            entered.set(true)
            for _ in 0..<1000 where !released.value { try? await Task.sleep(for: .milliseconds(10)) }
            return .success(["released": .bool(released.value)])
        }
        return handlers
    }

    @Test func theWorkerRunsInTheProgramsGroupAndDrainsBeforeTheProgramsServiceStops() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let (entered, released) = (TestFlag(), TestFlag())
            let worker = WorkerDaemon(
                configuration: harness.configuration(), handlers: Self.handlers(entered: entered, released: released),
                templateLoader: TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": harness.templateDirectory]))
            let (programStarted, workerDoneWhenProgramStopped) = (TestFlag(), TestFlag())
            let program = ProgramService {
                programStarted.set(true)
                try? await gracefulShutdown()
                // The group stops its services in reverse order: the worker has drained by now.
                workerDoneWhenProgramStopped.set(
                    !worker.runtime.eventSystem.status.running && worker.statistics.snapshot.totalExecuted == 1)
            }
            let group = ServiceGroup(
                configuration: ServiceGroupConfiguration(
                    services: [.init(service: program), .init(service: worker)], logger: Logger(label: "test.program")))
            let running = Task { try await group.run() }

            let task = try await harness.createTask(steps: ["slow"])
            try await harness.enqueue(task, "slow")
            try await waitUntil(timeout: .seconds(20)) { entered.value }
            #expect(programStarted.value)
            await group.triggerGracefulShutdown()
            released.set(true)
            try await running.value

            // Graceful: the step running when shutdown began was finished and its result stored.
            #expect(try await harness.state(task["slow"]) == "enqueued_for_orchestration")
            let result = try await harness.result(task["slow"])
            #expect(result.success && result.result["released"] == .bool(true))
            #expect(workerDoneWhenProgramStopped.value)
        }
    }

    @Test func theLauncherRunsTheProgramsServiceInTheWorkersGroup() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: PipelineTests.yaml)
            let worker = WorkerDaemon(
                configuration: harness.configuration(), handlers: PipelineTests.handlers(),
                templateLoader: TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": harness.templateDirectory]))
            let stepDone = TestFlag()
            // The program's service runs a step through the worker, then ends: that shuts the group down.
            let program = ProgramService {
                let task = try await harness.createTask(steps: ["add_one"], context: .object(["n": .int(1)]))
                try await harness.enqueue(task, "add_one")
                try await harness.waitForState(task["add_one"], ["enqueued_for_orchestration"])
                stepDone.set(true)
            }
            try await WorkerLauncher.run(
                worker, beside: [program], gracefulShutdownSignals: [],
                logger: Logger(label: "test.launcher"))
            #expect(stepDone.value)
            #expect(worker.statistics.snapshot.totalExecuted == 1)
            #expect(!worker.runtime.eventSystem.status.running)
        }
    }
}
