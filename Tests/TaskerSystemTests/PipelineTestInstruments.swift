import Foundation
import Synchronization
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

// MARK: - Test instruments

/// Counts handler invocations per step (thread-safe).
final class InvocationCounter: Sendable {
    private let counts = Mutex<[UUID: Int]>([:])
    func record(_ step: UUID) { counts.withLock { $0[step, default: 0] += 1 } }
    func count(_ step: UUID) -> Int { counts.withLock { $0[step] ?? 0 } }
    var total: Int { counts.withLock { $0.values.reduce(0, +) } }
}

/// Connections currently held by borrowers, and how often one was lent while already held.
final class LendTracker: Sendable {
    private let state = Mutex<(held: Set<ObjectIdentifier>, doubleLent: Int)>(([], 0))
    func lend(_ id: ObjectIdentifier) { state.withLock { if !$0.held.insert(id).inserted { $0.doubleLent += 1 } } }
    func giveBack(_ id: ObjectIdentifier) { state.withLock { _ = $0.held.remove(id) } }
    var doubleLent: Int { state.withLock { $0.doubleLent } }
}

/// A thread-safe boolean.
final class TestFlag: Sendable {
    private let storage = Atomic<Bool>(false)
    func set(_ value: Bool) { storage.store(value, ordering: .sequentiallyConsistent) }
    var value: Bool { storage.load(ordering: .sequentiallyConsistent) }
}

/// Handler bodies running at once, and the most ever seen.
final class ConcurrencyGauge: Sendable {
    private struct State { var current = 0, maximum = 0, entered = 0 }
    private let state = Mutex(State())
    func enter() {
        state.withLock {
            $0.current += 1
            $0.entered += 1
            $0.maximum = max($0.maximum, $0.current)
        }
    }
    func leave() { state.withLock { $0.current -= 1 } }
    var current: Int { state.withLock { $0.current } }
    var maximum: Int { state.withLock { $0.maximum } }
    var entered: Int { state.withLock { $0.entered } }
}

// MARK: - Harness helpers for many steps

extension PipelineHarness.RunningWorker {
    /// Graceful shutdown, waiting at most `timeout` for the worker to finish; false (and an issue
    /// recorded) when it did not, so a test never hangs on a worker that does not stop.
    @discardableResult
    func stop(within timeout: Duration, _ label: String = "worker") async -> Bool {
        // Unstructured, so that a worker that never finishes cannot hold this function.
        let done = TestFlag()
        Task {
            _ = try? await self.stop()
            done.set(true)
        }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while !done.value && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        let stopped = done.value
        if !stopped {
            Issue.record("\(label) did not finish within \(timeout) of graceful shutdown")
            task.cancel()
        }
        return stopped
    }
}

extension PipelineHarness {
    struct StepSummary: CustomStringConvertible {
        var state: String
        var attempts: Int
        /// `in_progress` transitions.
        var starts: Int
        /// Messages for this step on `orchestration_step_results`.
        var results: Int
        var description: String { "state \(state), attempts \(attempts), starts \(starts), results \(results)" }
    }

    /// `count` tasks with one pending step `step` each.
    func createSingleStepTasks(count: Int, step: String) async throws -> [SeededTask] {
        var tasks: [SeededTask] = []
        for _ in 0..<count { tasks.append(try await createTask(steps: [step])) }
        return tasks
    }

    /// Three single-step tasks enqueued, the second's step already claimed elsewhere, and a claim
    /// request for each queued message (in task order): the setting of the claim repository tests.
    func claimRequestsWithOneTakenElsewhere(step: String) async throws -> (tasks: [SeededTask], messages: [Int64], requests: [ClaimRequest])
    {
        let tasks = try await createSingleStepTasks(count: 3, step: step)
        for task in tasks { try await enqueue(task, step) }
        let queue = QueueNames.workerQueue(namespace: namespace)
        let messages: [Int64] = try await admin.query("SELECT msg_id FROM pgmq.q_\(queue) ORDER BY msg_id")
            .map { row throws(PostgresError) in try row.decode("msg_id") }
        try await transition(tasks[1][step], from: "enqueued", to: "in_progress", event: "start")
        let requests = zip(tasks, messages).map {
            ClaimRequest(taskUUID: $0.0.taskUUID, stepUUID: $0.0[step], queue: queue, msgID: $0.1)
        }
        return (tasks, messages, requests)
    }

    /// `pending→enqueued` and the step message for every task's `step`, in ONE transaction (the
    /// notifications all arrive at once, on commit).
    func enqueueBatch(_ tasks: [SeededTask], _ step: String) async throws {
        let queue = QueueNames.workerQueue(namespace: namespace)
        let metadata = try JSONValue.object([
            "event": .string(#"{"type":"Enqueue"}"#), "timestamp": .string("2026-11-23T00:00:00+00:00"),
        ]).jsonString()
        let items = try tasks.map { task in
            (task[step], try PostgresJSON(StepMessage(taskUUID: task.taskUUID, stepUUID: task[step], correlationID: task.correlationID)))
        }
        try await admin.transaction { c in
            for (id, message) in items {
                try c.query(
                    """
                    WITH previous AS (
                        UPDATE tasker.workflow_step_transitions SET most_recent = false
                         WHERE workflow_step_uuid = $1 AND most_recent AND to_state = 'pending' RETURNING sort_key)
                    INSERT INTO tasker.workflow_step_transitions (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
                    SELECT $1, 'enqueued', 'pending', $2::jsonb, sort_key + 1, true, NOW(), NOW() FROM previous
                    """, [id, PostgresJSON(raw: metadata)])
                try PGMQ.sendWithNotify(c, queue: queue, message: message)
            }
        }
    }

    /// Waits until `count` workers are ready to receive: their listeners are connected (modes with
    /// a listener) or their pools have connected (polling only).
    func waitForWorkersReady(_ count: Int, mode: WorkerConfiguration.DeploymentMode, timeout: Duration = .seconds(20)) async throws {
        let application = mode == .pollingOnly ? "tasker-worker" : "tasker-worker-listener"
        try await waitUntil(timeout: timeout) {
            let n: Int = try await admin.query(
                """
                SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1
                """, [application])[0].decode("n")
            return n >= count
        }
        // The listener connects just before LISTEN completes; give it a moment.
        try await Task.sleep(for: .milliseconds(200))
    }

    /// Steps (of every task in the database) whose current state is in `states`.
    func countSteps(in states: Set<String>) async throws -> Int {
        let summaries = try await stepSummaries()
        return summaries.values.filter { states.contains($0.state) }.count
    }

    /// Waits (bounded) until every step in the database is in one of `states`.
    func waitForAllSteps(_ states: Set<String>, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var last: [String: Int] = [:]
        while ContinuousClock.now < deadline {
            if let summaries = try? await stepSummaries() {
                last = Dictionary(grouping: summaries.values, by: \.state).mapValues(\.count)
                if summaries.values.allSatisfy({ states.contains($0.state) }) { return true }
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("steps still not all in \(states.sorted()) after \(timeout): \(last)")
        return false
    }

    /// Every step in the database with its state, attempts, starts and result messages.
    func stepSummaries() async throws -> [UUID: StepSummary] {
        let rows = try await admin.query(
            """
            SELECT ws.workflow_step_uuid AS id, COALESCE(ws.attempts, 0) AS attempts,
                   COALESCE((SELECT t.to_state FROM tasker.workflow_step_transitions t
                              WHERE t.workflow_step_uuid = ws.workflow_step_uuid AND t.most_recent), 'pending') AS state,
                   (SELECT count(*) FROM tasker.workflow_step_transitions t
                     WHERE t.workflow_step_uuid = ws.workflow_step_uuid AND t.to_state = 'in_progress') AS starts,
                   (SELECT count(*) FROM pgmq.q_orchestration_step_results r
                     WHERE r.message->>'step_uuid' = ws.workflow_step_uuid::text) AS results
              FROM tasker.workflow_steps ws
            """)
        var summaries: [UUID: StepSummary] = [:]
        for row in rows {
            summaries[try row.decode("id")] = StepSummary(
                state: try row.decode("state"), attempts: try row.decode("attempts"),
                starts: try row.decode("starts"), results: try row.decode("results"))
        }
        return summaries
    }

    /// Messages in the worker queue (`q_`) or its archive (`a_`).
    func queueDepth(archived: Bool) async throws -> Int {
        let table = (archived ? "a_" : "q_") + QueueNames.workerQueue(namespace: namespace)
        return try await admin.query("SELECT count(*) AS n FROM pgmq.\(table)")[0].decode("n")
    }

    /// Ids of the archived worker-queue messages.
    func archivedIDs() async throws -> Set<Int64> {
        let table = "a_" + QueueNames.workerQueue(namespace: namespace)
        return Set(try await admin.query("SELECT msg_id FROM pgmq.\(table)").map { try $0.decode("msg_id") })
    }

    /// Messages currently on the worker queue (`q_`), by id.
    func queuedIDs() async throws -> Set<Int64> {
        let table = "q_" + QueueNames.workerQueue(namespace: namespace)
        return Set(try await admin.query("SELECT msg_id FROM pgmq.\(table)").map { try $0.decode("msg_id") })
    }

    /// Waits (bounded) until worker-queue message `msgID` is archived.
    func waitForArchived(_ msgID: Int64, timeout: Duration = .seconds(10)) async throws {
        try await waitUntil(timeout: timeout) { try await archivedIDs().contains(msgID) }
    }

    /// Every message on `queue` (not archived), oldest first.
    func eventMessages(_ queue: String) async throws -> [JSONValue] {
        try await admin.query("SELECT message FROM pgmq.q_\(queue) ORDER BY msg_id").map { try $0.decode("message") }
    }
}
