import Foundation
import TaskerOrchestration
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Crash recovery seen from running workers: a SIGKILLed worker process's steps are retried by
/// another worker and the companion orchestration and complete, each run to success once; the late
/// result of a step recovered from a live worker is refused cleanly; `/health/detailed` reports
/// long-running `in_progress` steps by worker.
@Suite("Crash recovery of running workers", .serialized, .timeLimit(.minutes(4)))
struct CrashRecoveryWorkerTests {
    static let crashYAML = """
        name: crash_workflow
        namespace_name: examples
        version: 1.0.0
        steps:
          - name: crash_nap
            handler: { callable: tasker.sleep, initialization: { ms: 600000 } }
            timeout_seconds: 900
          - name: crash_after
            dependencies: [crash_nap]
            handler: { callable: tasker.sleep, initialization: { ms: 50 } }
        """

    /// The real `tasker-worker` claims the first step of 4 tasks and is killed with SIGKILL; a
    /// second worker (default `[worker.crash_recovery]`) stores a `worker_lost` result for each
    /// within 10 s, orchestration retries them, every task completes, and every step has exactly
    /// one successful result.
    @Test func sigkilledWorkersStepsAreRetriedAndComplete() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db, extra: ["crash_workflow.yaml": Self.crashYAML])
            let victim = try WorkerProcess(["run"], db: db, templatePath: harness.templateDirectory)
            defer { victim.kill() }
            let orchestration = harness.startOrchestration()
            var tasks: [UUID] = []
            for n in 0..<4 {
                tasks.append(try await orchestration.submit(OrchestrationHarness.request("crash_workflow", ["n": .int(Int64(n))])).taskUUID)
            }
            let victimUUID: String
            do {
                try await waitUntil(timeout: .seconds(90)) {
                    try await Self.inProgress(harness, name: "crash_nap") == 4
                }
                victimUUID = try await harness.admin.query(
                    """
                    SELECT DISTINCT metadata->>'worker_uuid' AS w FROM tasker.workflow_step_transitions
                     WHERE to_state = 'in_progress' AND most_recent
                    """)[0].decode("w")
            } catch {
                Issue.record("the worker process did not claim the steps:\n\(victim.log.suffix(3000))")
                throw error
            }
            #expect(victim.log.contains("liveness lease taken"))
            // The victim's nap (10 min, its timeout 15 min) never ends before the kill, however slow the machine; the
            // rescuer's `tasker.sleep` returns at once, so the retried steps complete quickly.
            let quickSleep = HandlerRegistry.withBuiltIns()
            quickSleep.register(BuiltInHandlers.sleep) { _ in .success(.object(["slept_ms": .int(0)])) }
            let rescuer = harness.startWorker(quickSleep)
            try await waitUntil(timeout: .seconds(20)) { rescuer.daemon.runtime.dispatch.capacity.holdsLiveness }
            let killedAt = Date()
            victim.kill()

            for task in tasks { try await harness.waitForTask(task, in: ["complete", "error"], timeout: .seconds(60)) }
            for task in tasks { #expect(try await harness.taskState(task) == "complete") }
            // Each step succeeded once; each first step has one worker_lost error naming the victim.
            let successes: [Int] = try await harness.admin.query(
                """
                SELECT count(*) FILTER (WHERE wst.to_state = 'enqueued_for_orchestration')::int AS n
                  FROM tasker.workflow_steps ws JOIN tasker.workflow_step_transitions wst USING (workflow_step_uuid)
                 WHERE ws.task_uuid = ANY($1::uuid[]) GROUP BY ws.workflow_step_uuid
                """, ["{" + tasks.map(\.uuidString).joined(separator: ",") + "}"]
            ).map { try $0.decode("n") }
            #expect(successes == Array(repeating: 1, count: 8))
            let lost = try await harness.admin.query(
                """
                SELECT EXTRACT(EPOCH FROM wst.created_at AT TIME ZONE 'UTC')::float8 AS at, wst.metadata->>'event' AS event
                  FROM tasker.workflow_steps ws JOIN tasker.workflow_step_transitions wst USING (workflow_step_uuid)
                 WHERE ws.task_uuid = ANY($1::uuid[]) AND wst.to_state = 'enqueued_as_error_for_orchestration'
                """, ["{" + tasks.map(\.uuidString).joined(separator: ",") + "}"])
            #expect(lost.count == 4)
            var recoverySeconds: [Double] = []
            for row in lost {
                let event: String = try row.decode("event")
                #expect(event.contains("worker_lost") && event.contains(victimUUID))
                recoverySeconds.append(try row.decode("at", as: Double.self) - killedAt.timeIntervalSince1970)
            }
            let slowest = recoverySeconds.max() ?? .infinity
            print(
                "crash recovery after SIGKILL: worker_lost results written \(recoverySeconds.sorted().map { String(format: "%.2f", $0) }) s after the kill"
            )
            #expect(slowest < 10, "recovery took \(slowest) s")
            // Counted just after each transaction committed (which the rows above show).
            try await waitUntil { rescuer.daemon.statistics.snapshot.stepsRecovered >= 4 }
            #expect(rescuer.daemon.statistics.snapshot.stepsRecovered == 4)
            try await rescuer.stop()
            try await orchestration.stop()
        }
    }

    static func inProgress(_ harness: OrchestrationHarness, name: String) async throws -> Int {
        try await harness.admin.query(
            """
            SELECT count(*)::int AS n FROM tasker.workflow_step_transitions wst
              JOIN tasker.workflow_steps ws USING (workflow_step_uuid)
              JOIN tasker.named_steps ns USING (named_step_uuid)
             WHERE wst.most_recent AND wst.to_state = 'in_progress' AND ns.name = $1
            """, [name])[0].decode("n")
    }

    static let lateYAML = """
        name: late
        namespace_name: late
        version: 1.0.0
        steps:
          - name: gated
            handler: { callable: test.gate }
          - name: after
            handler: { callable: tasker.noop }
        """

    /// A step recovered by another worker while its own worker still ran it (as after losing the
    /// liveness lease for longer than the grace period): the late result is refused once, counted
    /// and logged, and the worker goes on working.
    @Test func lateResultOfRecoveredStepIsRefusedCleanly() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.lateYAML)
            let (handlers, gate) = HandlerRegistry.withGate(returning: .object(["late": .bool(true)]))
            let worker = harness.startWorker(handlers, configuration: harness.configuration())
            let task = try await harness.createTask(steps: ["gated", "after"])
            try await harness.enqueue(task, "gated")
            try await harness.waitForState(task["gated"], ["in_progress"])

            // Another worker's recovery (`ResultStatement.recoverFunctions` on the claim it saw, as if this
            // worker's lease had expired: the uuid of a worker without a lease).
            let claim: UUID = try await harness.admin.query(
                """
                SELECT workflow_step_transition_uuid FROM tasker.workflow_step_transitions
                 WHERE workflow_step_uuid = $1 AND most_recent
                """, [task["gated"]])[0].decode("workflow_step_transition_uuid")
            let step = LostWorkerStep(
                transitionUUID: claim, stepUUID: task["gated"], taskUUID: task.taskUUID, correlationID: task.correlationID,
                workerUUID: worker.daemon.identity.uuid)
            let other = WorkerIdentity()
            let result = StepExecutionResult.workerLost(step, recoveredBy: other, grace: .seconds(4))
            let message = StepMessage(taskUUID: task.taskUUID, stepUUID: task["gated"], correlationID: task.correlationID)
            let write = CompletionWrite(message: message, success: false, resultJSON: try result.jsonString(), workerUUID: other.uuid)
            // Recovered as if `other` had claimed it (it has no lease): the compare-and-set on the transition wins.
            var asOther = step
            asOther.workerUUID = other.uuid
            let recovered = try await harness.admin.query(
                ResultStatement.recoverFunctions.statement.prepared, ResultStatement.recoverFunctions.values(for: write, lost: asOther))
            #expect(try recovered.first?.decode("msg_id", as: Int64?.self) != nil)

            gate.trigger()
            try await waitUntil(timeout: .seconds(10)) { worker.daemon.statistics.snapshot.lateResultsRefused == 1 }
            #expect(
                try await harness.transitions(task["gated"]).map(\.to) == [
                    "pending", "enqueued", "in_progress", "enqueued_as_error_for_orchestration",
                ])
            #expect(try await harness.result(task["gated"]).error?.errorType == "worker_lost")
            // Not retried, and the worker goes on.
            try await harness.enqueue(task, "after")
            try await harness.waitForState(task["after"], ["enqueued_for_orchestration"])
            #expect(worker.daemon.statistics.snapshot.lateResultsRefused == 1)
            #expect(worker.daemon.statistics.snapshot.completionRetries == 0)
            try await worker.stop()
        }
    }

    /// While the worker cannot renew its lease (its row is locked by a transaction that does not
    /// end, so renewals hang rather than fail) no step is claimed once the lease is in its last
    /// quarter by the database's clock, although the worker's own rule still lets it try (one
    /// renewal that hangs is one failure): the claim statement refuses, the worker stops claiming and
    /// readiness says why; once it can renew again, the waiting step runs. Before the claim checked
    /// the lease, this step was claimed in the ~1.5 lease durations between the lapse and the second
    /// failed renewal, and a rescuer could have recovered it from the live worker.
    @Test func noClaimsWhileTheLeaseCannotBeRenewed() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.lateYAML)
            let worker = harness.startWorker(HandlerRegistry.withBuiltIns(), configuration: harness.configuration())
            let capacity = worker.daemon.runtime.dispatch.capacity
            try await waitUntil(timeout: .seconds(20)) { capacity.holdsLiveness }
            let blocker = try await db.connect()
            try await blocker.execute("BEGIN")
            let cutoff: Date = try await blocker.query(
                """
                SELECT expires_at - (expires_at - renewed_at) / 4 AS cutoff FROM tasker.worker_leases
                 WHERE worker_uuid = $1 FOR UPDATE
                """, [worker.daemon.identity.uuid])[0].decode("cutoff")
            // The lease row cannot change now; wait, on the database's clock, for its last quarter.
            try await waitUntil(timeout: .seconds(20)) {
                try await harness.admin.query("SELECT clock_timestamp() > $1 AS past", [cutoff])[0].decode("past", as: Bool.self)
            }
            let task = try await harness.createTask(steps: ["after"])
            try await harness.enqueue(task, "after")
            try await waitUntil(timeout: .seconds(20)) { !capacity.holdsLiveness }
            // Any claim from the cutoff on is refused by the database: the step was never taken.
            #expect(try await harness.transitions(task["after"]).map(\.to) == ["pending", "enqueued"])
            let health = await WorkerHealthService(runtime: worker.daemon.runtime).readiness()
            #expect(!health.isReady)
            let said = String(decoding: try JSONEncoder().encode(health), as: UTF8.self)
            #expect(said.contains("liveness lease"), "\(said)")
            #expect(capacity.livenessProblem != nil)

            try await blocker.execute("COMMIT")
            try await harness.waitForState(task["after"], ["enqueued_for_orchestration"], timeout: .seconds(20))
            #expect(capacity.holdsLiveness)
            await blocker.close()
            try await worker.stop()
            // Shutdown deleted the lease.
            let leases: Int = try await harness.admin.query("SELECT count(*)::int AS n FROM tasker.worker_leases")[0].decode("n")
            #expect(leases == 0)
        }
    }

    /// `/health/detailed` counts the steps in_progress longer than the threshold by worker, with
    /// `unrecorded` for steps claimed without a `worker_uuid`, and shows the liveness lease held.
    @Test func detailedHealthReportsLongRunningStepsByWorker() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: CrashRecoveryTests.yaml)
            let task = try await harness.createTask(steps: ["dead_one", "dead_two", "upstream", "live"])
            let worker = UUID.v7()
            try await CrashRecoveryTests.claim(harness, task, "dead_one", worker: worker)
            try await CrashRecoveryTests.claim(harness, task, "dead_two", worker: worker)
            try await CrashRecoveryTests.claim(harness, task, "upstream", worker: nil)
            try await CrashRecoveryTests.claim(harness, task, "live", worker: nil)
            try await harness.admin.query(
                """
                UPDATE tasker.workflow_step_transitions SET created_at = created_at - interval '1 hour'
                 WHERE most_recent AND to_state = 'in_progress' AND workflow_step_uuid <> $1
                """, [task["live"]])
            var configuration = harness.configuration()
            configuration.worker.crashRecovery.enabled = false
            configuration.worker.crashRecovery.staleInProgressThresholdSeconds = 60
            let running = harness.startWorker(HandlerRegistry.withBuiltIns(), configuration: configuration)
            try await waitUntil(timeout: .seconds(20)) { running.daemon.runtime.dispatch.capacity.holdsLiveness }

            let health = WorkerHealthService(runtime: running.daemon.runtime)
            let detailed = await health.detailed()
            let recovery = try #require(detailed.stepRecovery)
            #expect(recovery.livenessLeaseHeld)
            #expect(!recovery.scannerEnabled)
            #expect(recovery.inProgressThresholdSeconds == 60)
            #expect(recovery.staleInProgressSteps == 3)
            let byWorker = Dictionary(uniqueKeysWithValues: (recovery.staleInProgressByWorker ?? []).map { ($0.workerUUID, $0.steps) })
            #expect(byWorker == [worker.uuidString.lowercased(): 2, "unrecorded": 1])
            #expect((recovery.staleInProgressByWorker ?? []).allSatisfy { $0.oldestSeconds >= 3600 })
            let json = String(decoding: try JSONEncoder().encode(detailed), as: UTF8.self)
            #expect(json.contains(#""step_recovery":"#) && json.contains(#""stale_in_progress_by_worker":"#))
            // The scanner is off: the dead worker's steps stay as they are.
            #expect(try await harness.state(task["dead_one"]) == "in_progress")
            try await running.stop()
        }
    }
}
