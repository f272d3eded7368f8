import AsyncAlgorithms
import Foundation
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Completions under load: several results in one transaction, each still checked on its own, and
/// a batch that fails is stored result by result (nothing lost, nothing half-stored).
@Suite("Completion batching", .timeLimit(.minutes(2)))
struct CompletionBatchTests {
    static let yaml = """
        name: batched
        namespace_name: batching
        version: 1.0.0
        steps:
          - name: one
            handler:
              callable: test.gate
          - name: two
            handler:
              callable: test.gate
          - name: three
            handler:
              callable: test.gate
        """

    /// Claims every step of `task` as the executor of worker `worker` does (a result is stored only
    /// over its writer's own claim), returning what the dispatcher would run.
    static func claimAll(
        _ harness: PipelineHarness, _ task: PipelineHarness.SeededTask,
        _ names: [String], worker: UUID
    ) async throws -> [ClaimedStep] {
        let queue = QueueNames.workerQueue(namespace: harness.namespace)
        var claimed: [ClaimedStep] = []
        try await harness.holdLease(worker)
        for name in names {
            try await harness.enqueue(task, name)
            let msgID: Int64 = try await harness.admin.query("SELECT max(msg_id) AS id FROM pgmq.q_\(queue)")[0].decode("id")
            let hydrated = try #require(try await StepRepository.hydrate(harness.admin, taskUUID: task.taskUUID, stepUUID: task[name]))
            let outcome = try await StepRepository.claim(
                harness.admin, stepUUID: task[name], queue: queue, msgID: msgID, stamp: ClaimStamp(worker: worker))
            #expect(outcome == .claimed(attempts: 1))
            let message = StepMessage(taskUUID: task.taskUUID, stepUUID: task[name], correlationID: task.correlationID)
            claimed.append(ClaimedStep(message: message, hydrated: hydrated, definition: nil, dependencyResults: [:], attempts: 1))
        }
        return claimed
    }

    static func completion(_ step: ClaimedStep, value: Int) -> StepCompletion {
        StepCompletion(
            step: step,
            result: .success(
                stepUUID: step.message.stepUUID, result: .object(["value": .int(Int64(value))]), startedAt: Date(),
                completedAt: Date(), workerID: "worker_test", hostname: "test"))
    }

    static func resultMessages(_ harness: PipelineHarness) async throws -> Int {
        try await harness.admin.query("SELECT count(*) AS n FROM pgmq.q_orchestration_step_results")[0].decode("n")
    }

    @Test func aBatchStoresEachResultAndSkipsAStepNoLongerInProgress() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let task = try await harness.createTask(steps: ["one", "two", "three"])
            let worker = UUID()
            let steps = try await Self.claimAll(harness, task, ["one", "two", "three"], worker: worker)
            // Someone else moved "two" on (e.g. orchestration's staleness handling): its result must not be written.
            try await harness.transition(task["two"], from: "in_progress", to: "error", event: "fail")
            let writes = try steps.enumerated().map { index, step in
                CompletionWrite(
                    message: step.message, success: true,
                    resultJSON: try Self.completion(step, value: index).result.jsonString(),
                    workerUUID: worker)
            }
            let outcomes = try await StepRepository.completeBatch(harness.admin, writes)
            #expect(outcomes.count == 3)
            guard case .completed = outcomes[0], case .completed = outcomes[2] else {
                Issue.record("expected one and three stored: \(outcomes)")
                return
            }
            #expect(outcomes[1] == .notInProgress)
            #expect(try await harness.state(task["one"]) == "enqueued_for_orchestration")
            #expect(try await harness.state(task["two"]) == "error")
            #expect(try await harness.state(task["three"]) == "enqueued_for_orchestration")
            #expect(try await harness.result(task["three"]).result["value"]?.intValue == 2)
            #expect(try await Self.resultMessages(harness) == 2)
        }
    }

    @Test func aBatchThatFailsIsStoredResultByResultWithNothingLost() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let task = try await harness.createTask(steps: ["one", "two", "three"])
            let identity = WorkerIdentity()
            let steps = try await Self.claimAll(harness, task, ["one", "two", "three"], worker: identity.uuid)
            // The first write of "two"'s result fails (as a deadlock would); later writes pass.
            try await harness.admin.execute("CREATE SEQUENCE tasker.test_fail_once")
            try await harness.admin.injectFault(
                "test_fail_once", before: "INSERT", on: "tasker.workflow_step_transitions",
                """
                IF NEW.workflow_step_uuid = '\(task["two"])' AND NEW.to_state = 'enqueued_for_orchestration'
                   AND nextval('tasker.test_fail_once') = 1 THEN
                    RAISE EXCEPTION 'injected failure' USING ERRCODE = '40P01';
                END IF;
                """)
            let pool = db.pool(maxConnections: 2)
            let statistics = WorkerStatistics()
            let capacity = WorkerCapacity(permits: 10)
            for _ in steps { capacity.claimDispatched() }
            let service = CompletionProcessorService(
                completions: AsyncChannel<StepCompletion>(), bufferSize: 10, pool: pool,
                domainEvents: DomainEventActor(pool: pool, statistics: statistics), statistics: statistics,
                identity: identity, capacity: capacity)
            await service.store(steps.enumerated().map { Self.completion($1, value: $0) })

            for name in ["one", "two", "three"] {
                #expect(try await harness.state(task[name]) == "enqueued_for_orchestration", "\(name)")
            }
            #expect(try await harness.result(task["two"]).result["value"]?.intValue == 1)
            #expect(try await Self.resultMessages(harness) == 3)
            // The failure hit the batch (no single write needed a retry), then each was stored alone.
            let triggerCalls: Int = try await harness.admin.query("SELECT last_value AS n FROM tasker.test_fail_once")[0].decode("n")
            #expect(triggerCalls == 2)
            #expect(statistics.snapshot.completionRetries == 0)
            #expect(statistics.snapshot.completionsBatched == 0)
            #expect(capacity.unstoredResults == 0)
            await pool.close()
        }
    }

    /// Sixteen handlers finish at the same moment: the results that pile up while the writers are
    /// busy are stored together, and every one of them is stored exactly once.
    @Test func resultsThatPileUpAreStoredInSharedTransactions() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let gate = GateCounter(opensAt: 16)
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.gate") { _ in
                await gate.arriveAndWait()
                return .success(.emptyObject)
            }
            let worker = harness.startWorker(handlers, configuration: harness.configuration(maxConcurrentHandlers: 30))
            let tasks = try await harness.createSingleStepTasks(count: 16, step: "one")
            try await harness.enqueueBatch(tasks, "one")
            #expect(await harness.waitForAllSteps(["enqueued_for_orchestration"], timeout: .seconds(30)))
            try await worker.stop()
            #expect(try await Self.resultMessages(harness) == 16)
            for task in tasks {
                #expect(try await harness.transitions(task["one"]).filter { $0.to == "enqueued_for_orchestration" }.count == 1)
            }
            #expect(worker.daemon.statistics.snapshot.completionsBatched > 0)
            #expect(worker.daemon.statistics.snapshot.completionRetries == 0)
        }
    }
}

/// Holds every caller until `opensAt` callers have arrived, then lets them all go at once.
private actor GateCounter {
    private let opensAt: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private var open = false

    init(opensAt: Int) { self.opensAt = opensAt }

    func arriveAndWait() async {
        if open { return }
        await withCheckedContinuation { continuation in
            waiting.append(continuation)
            if waiting.count >= opensAt {
                open = true
                for waiter in waiting { waiter.resume() }
                waiting.removeAll()
            }
        }
    }
}
