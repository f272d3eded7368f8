import Foundation
import Logging
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// Lost answers: the connection breaks after the server ran a claim or a completion, so the worker
/// sees an error for a transaction that committed. `AnswerLosingProxy` loses the server's reply the
/// way a terminated backend or a cut network does; the worker must ask the database what happened
/// instead of guessing (a committed claim would otherwise leave its step in_progress with nobody to
/// run it; a committed result would lose its domain events).
@Suite("Lost answers", .timeLimit(.minutes(2)))
struct LostAnswerTests {
    static let yaml = PipelineRobustnessTests.yaml

    @Test func theRepositoryFindsAClaimWhoseAnswerWasLost() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let (_, messages, requests) = try await harness.claimRequestsWithOneTakenElsewhere(step: "work")
            let proxy = try AnswerLosingProxy(databaseURL: db.url)
            defer { proxy.close() }
            let client = try await PostgresConnection.connect(url: proxy.url, applicationName: "tasker-test-lost")
            proxy.loseNextAnswer(toRequestContaining: ClaimStatement.functions.statement.prepared.name)
            let stamp = ClaimStamp(worker: UUID())
            try await harness.holdLease(try #require(stamp.worker))
            let error = await #expect(throws: PostgresError.self) {
                try await StepRepository.hydrateAndClaim(client, requests, timeout: .seconds(5), stamp: stamp)
            }
            #expect(proxy.answersLost == 1)
            #expect(error?.leavesOutcomeUnknown == true, "\(String(describing: error))")
            let clientPID = await client.backendPID
            #expect(error?.backendPID == clientPID)
            await client.close()

            // The claim committed: the worker's error says nothing, the database says everything.
            // Asked as the worker asks (`askUntilAnswered`): on a loaded host the broken session may
            // take longer than the fence's 5 s to end, and the question is then asked again.
            let session = error?.backendPID
            let pool = db.pool(maxConnections: 1)
            let answer = await pool.askUntilAnswered(
                "the claims", backoff: ReconnectBackoff(initial: .milliseconds(50), maximum: .seconds(1)),
                logger: Logger(label: "tasker.test.lost")
            ) { c throws(PostgresError) in try StepRepository.findClaims(c, requests, stamp: stamp, session: session) }
            await pool.close()
            let found = try #require(answer)
            #expect(found.map(\.claim) == [.claimed(attempts: 1), .notClaimable, .claimed(attempts: 1)])
            #expect(try found.map { try $0.hydrated.get()?.currentState } == ["in_progress", "in_progress", "in_progress"])
            #expect(try await harness.queuedIDs() == [messages[1]], "the claimed steps' messages were archived")
            // Another attempt (1 ms later, or another worker at the same time) did not make these claims.
            for other in [
                ClaimStamp(worker: stamp.worker, time: stamp.time.addingTimeInterval(0.001)),
                ClaimStamp(worker: UUID(), time: stamp.time),
            ] {
                let found = try await StepRepository.findClaims(harness.admin, requests, stamp: other, session: nil)
                #expect(found.map(\.claim) == [.notClaimable, .notClaimable, .notClaimable])
            }
        }
    }

    /// Before reading the answer, the broken session's server process is ended if it still exists,
    /// inside a transaction or seemingly idle (it may hold the request unread), and waited for.
    @Test func theBrokenSessionIsFencedBeforeTheAnswerIsRead() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let open = try await db.connect(applicationName: "tasker-test-open")
            try await open.query("BEGIN")
            try await open.query("SELECT 1")
            let idle = try await db.connect(applicationName: "tasker-test-idle")
            let (openPID, idlePID) = (await open.backendPID, await idle.backendPID)
            func alive(_ pid: Int32) async throws -> Bool {
                try await !harness.admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [Int(pid)]).isEmpty
            }
            let bystander = try await db.connect(applicationName: "tasker-test-bystander")
            let bystanderPID = await bystander.backendPID
            _ = try await StepRepository.findClaims(harness.admin, [], stamp: ClaimStamp(), session: openPID)
            #expect(try await !alive(openPID))
            #expect(try await alive(idlePID))
            _ = try await StepRepository.findClaims(harness.admin, [], stamp: ClaimStamp(), session: idlePID)
            #expect(try await !alive(idlePID))
            #expect(try await alive(bystanderPID), "only the broken session is ended")
            // Gone already, or this very session: nothing to end.
            let own = await harness.admin.backendPID
            _ = try await StepRepository.findClaims(harness.admin, [], stamp: ClaimStamp(), session: idlePID)
            _ = try await StepRepository.findClaims(harness.admin, [], stamp: ClaimStamp(), session: own)
            #expect(try await alive(own))
            await bystander.close()
            await open.close()
            await idle.close()
        }
    }

    /// The claim's answer is lost in each claim path (a notified message alone, a poll read's batch):
    /// the claimed steps run once each, and nothing is left in_progress.
    @Test(arguments: [WorkerConfiguration.DeploymentMode.eventDrivenOnly, .pollingOnly])
    func aStepWhoseClaimAnswerWasLostStillRuns(mode: WorkerConfiguration.DeploymentMode) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let proxy = try AnswerLosingProxy(databaseURL: db.url)
            defer { proxy.close() }
            let invocations = InvocationCounter()
            var configuration = PipelineRobustnessTests.configuration(harness, mode: mode)
            configuration.common.database.url = proxy.url
            let worker = harness.startWorker(PipelineRobustnessTests.countingHandlers(invocations), configuration: configuration)
            try await harness.waitForWorkersReady(1, mode: mode)
            let tasks = try await harness.createSingleStepTasks(count: 4, step: "work")
            // The worker claims with the static statement of its queue (a known PGMQ layout).
            let queue = QueueNames.workerQueue(namespace: harness.namespace)
            proxy.loseNextAnswer(
                toRequestContaining: StepQueueStatements(layouts: [queue: .withLastReadAt]).claim(queue: queue).statement.prepared.name)
            try await harness.enqueueBatch(tasks, "work")
            #expect(await harness.waitForAllSteps(["enqueued_for_orchestration"], timeout: .seconds(20)))
            try await worker.stop()

            #expect(proxy.answersLost == 1)
            let statistics = worker.daemon.statistics.snapshot
            #expect(statistics.claimsRecovered >= 1)
            for (step, summary) in try await harness.stepSummaries() {
                #expect(summary.starts == 1 && summary.results == 1, "step \(step): \(summary)")
                #expect(invocations.count(step) == 1, "step \(step) ran \(invocations.count(step)) times")
            }
            #expect(try await harness.queueDepth(archived: false) == 0)
        }
    }

    /// The completion's answer is lost: the result is found stored, not written again, and its
    /// domain event is still published.
    @Test func aResultWhoseAnswerWasLostIsFoundAndItsEventsFire() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let proxy = try AnswerLosingProxy(databaseURL: db.url)
            defer { proxy.close() }
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.announce") { _ in .success(.object(["order": .int(7)])) }
            var configuration = PipelineRobustnessTests.configuration(harness, mode: .hybrid)
            configuration.common.database.url = proxy.url
            let worker = harness.startWorker(handlers, configuration: configuration)
            try await harness.waitForWorkersReady(1, mode: .hybrid)
            let task = try await harness.createTask(steps: ["announce"])
            proxy.loseNextAnswer(
                toRequestContaining: StepQueueStatements(layouts: [QueueNames.stepResults: .withLastReadAt]).result.statement.prepared.name)
            try await harness.enqueue(task, "announce")
            try await harness.waitForState(task["announce"], ["enqueued_for_orchestration"])
            try await waitUntil(timeout: .seconds(10)) { worker.daemon.statistics.snapshot.domainEventsPublished == 1 }
            try await worker.stop()

            #expect(proxy.answersLost == 1)
            let statistics = worker.daemon.statistics.snapshot
            #expect(statistics.completionsRecovered == 1)
            #expect(statistics.domainEventsPublished == 1)
            #expect(
                try await harness.transitions(task["announce"]).map(\.to)
                    == ["pending", "enqueued", "in_progress", "enqueued_for_orchestration"])
            #expect(try await harness.stepSummaries()[task["announce"]]?.results == 1)
        }
    }

    @Test func theRepositoryTellsWhetherAResultIsStored() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let task = try await harness.createTask(steps: ["work"])
            try await harness.enqueue(task, "work")
            let worker = UUID()
            try await SchemaTests.transition(
                harness.admin, step: task["work"], from: "enqueued", to: "in_progress", metadata: ClaimStamp(worker: worker).metadata)
            let message = StepMessage(taskUUID: task.taskUUID, stepUUID: task["work"], correlationID: task.correlationID)
            let write = CompletionWrite(message: message, success: true, resultJSON: #"{"success":true}"#, workerUUID: worker)
            let later = CompletionWrite(
                message: message, success: true, resultJSON: #"{"success":true}"#, workerUUID: worker,
                now: Date().addingTimeInterval(1))
            #expect(try await !StepRepository.isStored(harness.admin, write, session: nil))
            _ = try await StepRepository.completeBatch(harness.admin, [write])
            #expect(try await StepRepository.isStored(harness.admin, write, session: nil))
            #expect(try await !StepRepository.isStored(harness.admin, later, session: nil))
            // Still found once orchestration has moved the step on.
            try await harness.completeLikeOrchestration(task, "work")
            #expect(try await StepRepository.isStored(harness.admin, write, session: nil))
        }
    }

    /// Crash recovery writes through the one result writer: the answer to its `worker_lost` write is
    /// lost, the result is found stored (not written twice), and the step counts as recovered and is
    /// announced. (Before, the lost answer was taken for a failure; the next scan found the step no
    /// longer `in_progress`, and a broker never heard of the result.)
    @Test func aRecoveryWhoseAnswerWasLostIsFoundStoredAndCounted() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: CrashRecoveryTests.yaml)
            let task = try await harness.createTask(steps: ["dead_one"])
            try await CrashRecoveryTests.claim(harness, task, "dead_one", worker: UUID.v7())
            let proxy = try AnswerLosingProxy(databaseURL: db.url)
            defer { proxy.close() }
            let pool = PostgresConnectionPool(
                configuration: PostgresPoolConfiguration(
                    url: proxy.url, maxConnections: 2, minConnections: 0, acquireTimeout: .seconds(5),
                    applicationName: "tasker-test-recovery"))
            let scanner = RecoveryScanner(
                pool: pool, identity: WorkerIdentity(), statistics: WorkerStatistics(), interval: .milliseconds(100), grace: .zero)
            proxy.loseNextAnswer(toRequestContaining: ResultStatement.recoverFunctions.statement.prepared.name)
            var tracker = AbsenceTracker(grace: .zero)
            #expect(await scanner.scanOnce(&tracker) == 1)
            #expect(proxy.answersLost == 1)
            #expect(scanner.statistics.snapshot.stepsRecovered == 1)
            #expect(
                try await harness.transitions(task["dead_one"]).map(\.to) == [
                    "pending", "enqueued", "in_progress", "enqueued_as_error_for_orchestration",
                ])
            let messages: Int = try await harness.admin.query(
                "SELECT count(*)::int AS n FROM pgmq.q_orchestration_step_results WHERE message->>'step_uuid' = $1",
                [task["dead_one"].uuidString.lowercased()])[0].decode("n")
            #expect(messages == 1)
            await pool.close()
        }
    }
}
