import Foundation
import Synchronization
import TaskerExamples
import TaskerOrchestration
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// Two workers and one orchestration run 200 mixed example tasks submitted through the
/// `orchestration_task_requests` queue: every task completes, no step runs twice, none is lost.
@Suite struct OrchestrationLoadTests {
    /// Handler runs per step, across every worker.
    final class RunCounter: Sendable {
        private let runs = Mutex<[UUID: Int]>([:])
        func record(_ step: UUID) { runs.withLock { $0[step, default: 0] += 1 } }
        var snapshot: [UUID: Int] { runs.withLock { $0 } }
    }

    /// The example handlers, each wrapped to count its runs.
    static func countingHandlers(_ counter: RunCounter) -> HandlerRegistry {
        let examples = OrchestrationHarness.exampleHandlers()
        let counting = HandlerRegistry()
        for callable in examples.callables {
            guard let inner = examples.handler(for: callable) else { continue }
            counting.register(callable) { context in
                counter.record(context.stepUUID)
                return try await inner.call(context)
            }
        }
        return counting
    }

    static func mixedRequest(_ index: Int) -> TaskRequest {
        switch index % 6 {
        case 0: return OrchestrationHarness.request("linear_workflow", ["number": .int(Int64(index))])
        case 1: return OrchestrationHarness.request("diamond_workflow", ["number": .int(Int64(index))])
        case 2: return OrchestrationHarness.request("tree_workflow", ["number": .int(Int64(index))])
        case 3: return OrchestrationHarness.request("decision_workflow", ["amount": .int(Int64(index * 20 + 1))])
        case 4: return OrchestrationHarness.request("batch_workflow", ["item_count": .int(Int64(index % 60)), "run": .int(Int64(index))])
        default: return OrchestrationHarness.request("retry_workflow", ["number": .int(Int64(index))])
        }
    }

    @Test(.timeLimit(.minutes(2))) func twoHundredMixedTasksWithTwoWorkers() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let counter = RunCounter()
            let workers = [
                harness.startWorker(Self.countingHandlers(counter), maxConcurrentHandlers: 50),
                harness.startWorker(Self.countingHandlers(counter), maxConcurrentHandlers: 50),
            ]
            let orchestration = harness.startOrchestration()
            let started = ContinuousClock.now
            for index in 0..<200 {
                let message = TaskRequestMessage(taskRequest: Self.mixedRequest(index))
                try await PGMQ.sendWithNotify(harness.admin, queue: QueueNames.taskRequests, message: try PostgresJSON(message))
            }
            let deadline = ContinuousClock.now.advanced(by: .seconds(60))
            var states: [String: Int] = [:]
            while ContinuousClock.now < deadline {
                states = try await Self.taskStates(harness)
                if states["complete", default: 0] + states["error", default: 0] == 200 { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            let elapsed = ContinuousClock.now - started
            #expect(states == ["complete": 200], "after \(elapsed): \(states)")
            try await orchestration.stop()
            for worker in workers { try await worker.stop() }

            // No step ran twice (retry_fetch runs exactly twice by design), none was lost.
            let steps = try await harness.admin.query(
                """
                SELECT ws.workflow_step_uuid, ns.name, ws.attempts,
                       (SELECT to_state FROM tasker.workflow_step_transitions t
                         WHERE t.workflow_step_uuid = ws.workflow_step_uuid AND t.most_recent) AS state,
                       (SELECT count(*) FROM tasker.workflow_step_transitions t
                         WHERE t.workflow_step_uuid = ws.workflow_step_uuid AND t.to_state = 'in_progress') AS claims
                  FROM tasker.workflow_steps ws JOIN tasker.named_steps ns USING (named_step_uuid)
                """)
            let runs = counter.snapshot
            var wrong: [String] = []
            for row in steps {
                let step: UUID = try row.decode("workflow_step_uuid")
                let name: String = try row.decode("name")
                let expected = name == "retry_fetch" ? 2 : 1
                let claims: Int = try row.decode("claims")
                let state: String? = try row.decode("state")
                if runs[step] != expected || claims != expected || state != "complete" {
                    wrong.append("\(name) \(step): runs \(runs[step] ?? 0), claims \(claims), state \(state ?? "nil")")
                }
            }
            #expect(wrong.isEmpty, "\(wrong.prefix(10))")
            #expect(runs.count == steps.count)
            let leftover: Int = try await harness.admin.query(
                """
                SELECT (SELECT count(*) FROM pgmq.q_orchestration_step_results)
                     + (SELECT count(*) FROM pgmq.q_orchestration_task_requests)
                     + (SELECT count(*) FROM pgmq.q_worker_examples_queue) AS n
                """)[0].decode("n")
            #expect(leftover == 0)
            print("200 mixed tasks, \(steps.count) steps, 2 workers: \(elapsed)")
        }
    }

    static func taskStates(_ harness: OrchestrationHarness) async throws -> [String: Int] {
        var states: [String: Int] = [:]
        for row in try await harness.admin.query(
            """
            SELECT to_state, count(*) AS n FROM tasker.task_transitions WHERE most_recent GROUP BY to_state
            """)
        {
            states[try row.decode("to_state")] = try row.decode("n")
        }
        return states
    }
}
