import Foundation
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// A role that may only connect cannot block crash recovery nor take a live worker's liveness
/// (issue #26, item 4; docs/security.md "Liveness"). The attacker is a role created here with
/// nothing but PUBLIC's privileges (CONNECT, TEMP): it takes advisory locks on whatever it likes
/// (among them the key the advisory-lock liveness of earlier versions used: class `1952543595`, the
/// worker uuid's last 32 bits) and tries to write the lease table, which is refused.
@Suite("Liveness under attack by a CONNECT-only role", .serialized, .timeLimit(.minutes(3)))
struct LivenessAttackTests {
    static let yaml = """
        name: attacked
        namespace_name: attacked
        version: 1.0.0
        steps:
          - name: nap
            handler: { callable: tasker.sleep, initialization: { ms: 600000 } }
            timeout_seconds: 900
          - name: quick
            handler: { callable: tasker.noop }
        """

    /// The class of the advisory locks earlier versions kept as liveness.
    static let oldLivenessClass = 0x7461_736B

    /// Runs `body` with a connection of a fresh CONNECT-only role; drops the role afterwards.
    static func withAttacker(_ db: TestDatabase, _ body: (PostgresConnection) async throws -> Void) async throws {
        let role = "attacker_\(UUID().uuidString.prefix(8).lowercased())"
        let cluster = try await PostgresConnection.connect(url: try TestEnvironment.adminURL())
        try await cluster.execute("CREATE ROLE \"\(role)\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT")
        do {
            let attacker = try await PostgresConnection.connect(
                url: try WorkerRoleTests.url(db.url, user: role), applicationName: "attacker")
            do {
                try await body(attacker)
            } catch {
                await attacker.close()
                throw error
            }
            await attacker.close()
        } catch {
            _ = try? await cluster.execute("DROP OWNED BY \"\(role)\"; DROP ROLE IF EXISTS \"\(role)\"")
            await cluster.close()
            throw error
        }
        try await cluster.execute("DROP ROLE IF EXISTS \"\(role)\"")
        await cluster.close()
    }

    /// Everything the attacker tries against the lease of `worker`: each write is refused.
    static func expectLeaseWritesRefused(_ attacker: PostgresConnection, worker: UUID) async {
        let attempts = [
            "INSERT INTO tasker.worker_leases (worker_uuid, expires_at, renewed_at, started_at) VALUES ('\(worker)', now() + interval '1 day', now(), now())",
            "UPDATE tasker.worker_leases SET expires_at = now() + interval '1 day'",
            "DELETE FROM tasker.worker_leases",
            "SELECT * FROM tasker.worker_leases FOR UPDATE",
            "LOCK TABLE tasker.worker_leases IN ACCESS EXCLUSIVE MODE",
        ]
        for statement in attempts {
            let error = await #expect(throws: PostgresError.self, "\(statement)") {
                try await attacker.execute("BEGIN; \(statement); COMMIT")
            }
            #expect(error?.sqlState == "42501", "\(statement): \(String(describing: error))")
            _ = try? await attacker.execute("ROLLBACK")
        }
    }

    /// Takes advisory locks on `worker`'s old liveness key (shared; exclusive when free; also the
    /// 64-bit form) and on a few thousand other keys; none of it is waited for.
    static func holdAdvisoryLocks(_ attacker: PostgresConnection, on worker: UUID) async throws {
        try await attacker.query(
            """
            SELECT pg_try_advisory_lock_shared($1::int4, ('x' || right($2::text, 8))::bit(32)::int4) AS shared,
                   pg_try_advisory_lock($1::int4, ('x' || right($2::text, 8))::bit(32)::int4) AS exclusive,
                   pg_try_advisory_lock_shared(('x' || right(replace($2::text, '-', ''), 16))::bit(64)::int8) AS wide
            """, [oldLivenessClass, worker.uuidString.lowercased()])
        try await attacker.query(
            "SELECT count(pg_try_advisory_lock($1::int4, k)) AS n FROM generate_series(-2000, 2000) k", [oldLivenessClass])
    }

    /// A worker killed with SIGKILL while the attacker holds advisory locks on its key (taken while
    /// it lived) and tries to write its lease: its step is recovered with `worker_lost` within 10 s.
    @Test func aKilledWorkersStepIsRecoveredWhileTheAttackerHoldsLocks() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let victim = try WorkerProcess(["run"], db: db, templatePath: harness.templateDirectory)
            defer { victim.kill() }
            let task = try await harness.createTask(steps: ["nap", "quick"])
            try await harness.enqueue(task, "nap")
            try await harness.waitForState(task["nap"], ["in_progress"], timeout: .seconds(90))
            let victimUUID = try #require(
                UUID(
                    uuidString: try await harness.admin.query(
                        """
                        SELECT metadata->>'worker_uuid' AS w FROM tasker.workflow_step_transitions
                         WHERE workflow_step_uuid = $1 AND most_recent
                        """, [task["nap"]])[0].decode("w", as: String.self)))
            #expect(victim.log.contains("liveness lease taken"))

            try await Self.withAttacker(db) { attacker in
                try await Self.holdAdvisoryLocks(attacker, on: victimUUID)
                await Self.expectLeaseWritesRefused(attacker, worker: victimUUID)

                let rescuer = harness.startWorker(HandlerRegistry.withBuiltIns(), configuration: harness.configuration())
                try await waitUntil(timeout: .seconds(20)) { rescuer.daemon.runtime.dispatch.capacity.holdsLiveness }
                let killedAt = ContinuousClock.now
                victim.kill()
                try await harness.waitForState(task["nap"], ["enqueued_as_error_for_orchestration"], timeout: .seconds(30))
                let took = killedAt.duration(to: .now)
                print("liveness attack: step of the killed worker recovered \(took) after the kill, attacker holding locks")
                #expect(took < .seconds(10))
                #expect(try await harness.result(task["nap"]).error?.errorType == "worker_lost")
                // Counted just after its transaction committed (which the state above shows).
                try await waitUntil { rescuer.daemon.statistics.snapshot.stepsRecovered >= 1 }
                #expect(rescuer.daemon.statistics.snapshot.stepsRecovered == 1)
                try await rescuer.stop()
            }
        }
    }

    /// A live worker whose connections all break once, while the attacker holds (and queues for)
    /// exclusive advisory locks on its key and tries to delete its lease, keeps its liveness and
    /// goes on claiming; it is ready throughout once reconnected.
    @Test func aLiveWorkerKeepsClaimingWhileTheAttackerTries() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let worker = harness.startWorker(HandlerRegistry.withBuiltIns(), configuration: harness.configuration())
            let capacity = worker.daemon.runtime.dispatch.capacity
            try await waitUntil(timeout: .seconds(20)) { capacity.holdsLiveness }
            let uuid = worker.daemon.identity.uuid
            try await Self.withAttacker(db) { attacker in
                try await Self.holdAdvisoryLocks(attacker, on: uuid)
                // An exclusive request queued behind the shared holders: in earlier versions the
                // worker, once its liveness session had ended, could not take its lock back past it.
                let role: String = try await attacker.query("SELECT current_user::text AS u")[0].decode("u")
                let queued = try await PostgresConnection.connect(
                    url: try WorkerRoleTests.url(db.url, user: role), applicationName: "attacker-queued")
                let exclusive = Task {
                    _ = try await queued.cancellable {
                        try await queued.query(
                            "SELECT pg_advisory_lock($1::int4, ('x' || right($2::text, 8))::bit(32)::int4)",
                            [Self.oldLivenessClass, uuid.uuidString.lowercased()])
                    }
                }
                try await waitUntil(timeout: .seconds(10)) {
                    let waiting: Int = try await harness.admin.query(
                        """
                        SELECT count(*)::int AS n FROM pg_locks
                         WHERE locktype = 'advisory' AND NOT granted
                           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                        """)[0].decode("n")
                    return waiting == 1
                }
                await Self.expectLeaseWritesRefused(attacker, worker: uuid)

                // One lost connection: every session of the worker ends.
                try await harness.admin.query(
                    """
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                     WHERE datname = $1 AND application_name LIKE 'tasker-worker%'
                    """, [db.name])
                let task = try await harness.createTask(steps: ["nap", "quick"])
                try await harness.enqueue(task, "quick")
                try await harness.waitForState(task["quick"], ["enqueued_for_orchestration"], timeout: .seconds(20))
                try await waitUntil(timeout: .seconds(20)) { capacity.holdsLiveness }
                try await waitUntil(timeout: .seconds(20)) {
                    await WorkerHealthService(runtime: worker.daemon.runtime).readiness().isReady
                }
                let lease: Int = try await harness.admin.query(
                    "SELECT count(*)::int AS n FROM tasker.worker_leases WHERE worker_uuid = $1 AND expires_at > clock_timestamp()",
                    [uuid])[0].decode("n")
                #expect(lease == 1)
                exclusive.cancel()
                _ = await exclusive.result
                await queued.close()
            }
            try await worker.stop()
        }
    }
}
