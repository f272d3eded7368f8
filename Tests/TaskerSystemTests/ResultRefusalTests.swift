import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// Issue #11 item 4: a result the database refuses for good (a NUL character in `jsonb`, a
/// constraint, a program limit), one too large, or one that does not encode as JSON (NaN, nesting
/// deeper than `JSONEncoder` allows) no longer occupies a writer forever, vanishes or crashes the
/// worker: the step gets a non-retryable `result_not_storable` error result naming the cause, and
/// other results keep being stored. A result left unstored by a failing database makes readiness
/// fail until it is stored.
@Suite("Results the database refuses", .timeLimit(.minutes(3)))
struct ResultRefusalTests {
    static let yaml = """
        name: refusals
        namespace_name: refusals
        version: 1.0.0
        steps:
          - name: nul
            handler: { callable: test.nul }
          - name: big
            handler: { callable: test.big }
          - name: nan
            handler: { callable: test.nan }
          - name: deep
            handler: { callable: test.deep }
          - name: constraint
            handler: { callable: test.ok }
          - name: limit
            handler: { callable: test.ok }
          - name: ok
            handler: { callable: test.ok }
        """

    static func handlers() -> HandlerRegistry {
        let handlers = HandlerRegistry.withBuiltIns()
        handlers.register("test.nul") { _ in .success(["text": "before\u{0}after"]) }
        handlers.register("test.big") { _ in .success(["blob": .string(String(repeating: "x", count: 4096))]) }
        handlers.register("test.nan") { _ in .success(["ratio": .double(.nan), "fine": 1]) }
        handlers.register("test.ok") { _ in .success(["ok": true]) }
        // Nested 20,000 levels deep: refused while encoding at the value limit (UntrustedJSON.maximumValueDepth), not crashing the worker.
        handlers.register("test.deep") { _ in .success(HostileFixtures.nestedJSON(20_000, object: false)) }
        return handlers
    }

    static func configuration(_ harness: PipelineHarness) -> TaskerConfiguration {
        var configuration = harness.configuration()
        configuration.worker.resultStorage.maxResultBytes = 2048
        configuration.worker.resultStorage.unstoredAlertSeconds = 1
        return configuration
    }

    @Test func refusedResultsBecomeNonRetryableErrorsNamingTheCauseAndStorageGoesOn() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let steps = ["nul", "big", "nan", "deep", "constraint", "limit", "ok"]
            let task = try await harness.createTask(steps: steps)
            // The database refuses these two steps' successful results for good.
            try await harness.admin.injectFault(
                "test_refuse_results", before: "INSERT", on: "tasker.workflow_step_transitions",
                """
                IF NEW.to_state = 'enqueued_for_orchestration' THEN
                    IF NEW.workflow_step_uuid = '\(task["constraint"])' THEN
                        RAISE EXCEPTION 'injected check violation' USING ERRCODE = '23514';
                    ELSIF NEW.workflow_step_uuid = '\(task["limit"])' THEN
                        RAISE EXCEPTION 'injected program limit' USING ERRCODE = '54000';
                    END IF;
                END IF;
                """)
            let worker = harness.startWorker(Self.handlers(), configuration: Self.configuration(harness))
            for step in steps { try await harness.enqueue(task, step) }

            let expected = [
                "nul": "SQLSTATE 22P05", "big": "limit of 2048 bytes", "nan": "NaN", "deep": "nested more than 120 levels",
                "constraint": "SQLSTATE 23514: injected check violation", "limit": "SQLSTATE 54000: injected program limit",
            ]
            for (step, cause) in expected {
                try await harness.waitForState(task[step], ["enqueued_as_error_for_orchestration"])
                let result = try await harness.result(task[step])
                #expect(!result.success, "\(step)")
                #expect(!result.isRetryable, "\(step)")
                #expect(result.error?.errorType == ResultRefusal.errorType, "\(step)")
                #expect(result.error?.retryable == false, "\(step)")
                let message = result.error?.message ?? ""
                #expect(message.hasPrefix("The step's result was not stored because"), "\(step): \(message)")
                #expect(message.contains(cause), "\(step): \(message)")
            }
            try await harness.waitForState(task["ok"], ["enqueued_for_orchestration"])
            #expect(try await harness.result(task["ok"]).result == ["ok": true])

            // No writer is left stuck: more results than there are writers are still stored.
            let more = try await harness.createTask(steps: ["ok"])
            let again = try await harness.createTask(steps: ["ok", "constraint"])
            try await harness.enqueue(more, "ok")
            try await harness.enqueue(again, "ok")
            try await harness.enqueue(again, "constraint")
            try await harness.waitForState(more["ok"], ["enqueued_for_orchestration"])
            try await harness.waitForState(again["ok"], ["enqueued_for_orchestration"])
            try await harness.waitForState(again["constraint"], ["enqueued_for_orchestration"])
            let runtime = worker.daemon.runtime
            // A result leaves the monitor just after its transaction committed (which the states show).
            try await waitUntil { runtime.resultStorage.snapshot().pending == 0 }
            #expect(runtime.resultStorage.snapshot().pending == 0)
            try await worker.stop()
        }
    }

    @Test func readinessFailsWhileAResultStaysUnstoredAndRecoversOnceItIsStored() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let task = try await harness.createTask(steps: ["ok"])
            // Every write of this step's result fails as a deadlock would: transient, retried.
            try await harness.admin.injectFault(
                "test_deadlock_results", before: "INSERT", on: "tasker.workflow_step_transitions",
                """
                IF NEW.workflow_step_uuid = '\(task["ok"])' AND NEW.to_state = 'enqueued_for_orchestration' THEN
                    RAISE EXCEPTION 'injected deadlock' USING ERRCODE = '40P01';
                END IF;
                """)
            let worker = harness.startWorker(Self.handlers(), configuration: Self.configuration(harness))
            try await harness.waitForWorkersReady(1, mode: .hybrid)
            let runtime = worker.daemon.runtime
            let health = WorkerHealthService(runtime: runtime)
            try await waitUntil(timeout: .seconds(20)) { await health.readiness().isReady }

            try await harness.enqueue(task, "ok")
            try await waitUntil(timeout: .seconds(20)) { await !health.readiness().isReady }
            let readiness = await health.readiness()
            #expect(readiness.checks.commandProcessor.verdict == .unhealthy)
            #expect(readiness.checks.database.verdict == .healthy)
            let message = readiness.checks.commandProcessor.message ?? ""
            #expect(message.contains("1 step results unstored for more than"), "\(message)")
            #expect(message.contains("[40P01]"), "\(message)")
            #expect(!message.contains("injected deadlock"), "the server's text stays out of health bodies: \(message)")
            let detailed = await health.detailed()
            #expect(detailed.status == "degraded")
            #expect(detailed.checks.commandProcessor.message?.contains("unstored") == true)
            #expect(try await harness.state(task["ok"]) == "in_progress")

            try await harness.admin.execute("DROP TRIGGER test_deadlock_results ON tasker.workflow_step_transitions")
            try await harness.waitForState(task["ok"], ["enqueued_for_orchestration"])
            try await waitUntil(timeout: .seconds(20)) { await health.readiness().isReady }
            try await worker.stop()
        }
    }
}
