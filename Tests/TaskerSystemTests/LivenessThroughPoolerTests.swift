import Foundation
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The liveness lease needs no server session (issue #26, item 4): through a real PgBouncer in
/// transaction mode, two workers' renewals share one server session, the claim statement checks
/// the claiming worker's lease on the database's clock, and crash recovery's scan tells the live
/// worker from the dead one, as they do connected directly. A connection opened as direct that
/// finds itself behind a pooler is refused (`SessionPoolerError`): the configuration must say so
/// (`common.database.transaction_pooler`, `PoolerWorkerTests`).
@Suite("Liveness through a transaction-mode pooler", .timeLimit(.minutes(2)))
struct LivenessThroughPoolerTests {
    @Test func theLeaseTheClaimsCheckAndTheRecoveryScanWorkThroughPgBouncer() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: CrashRecoveryTests.yaml)
            try await PgBouncer.with(databaseURL: db.url, poolMode: "transaction", serverConnections: 1) { bouncer in
                let a = try await PostgresConnection.connect(url: bouncer.url, applicationName: "tasker-lease-a")
                let b = try await PostgresConnection.connect(url: bouncer.url, applicationName: "tasker-lease-b")
                let (alive, dying) = (UUID.v7(), UUID.v7())

                // Two workers' renewals, interleaved, run in the pooler's one server session, which is
                // neither client's own: the lease keeps nothing in a session.
                var servers: Set<Int32> = []
                for _ in 0..<3 {
                    servers.insert(
                        try await WorkerLeaseRepository.renew(a, worker: alive, hostname: "a", duration: .seconds(600)).serverPID)
                    servers.insert(
                        try await WorkerLeaseRepository.renew(b, worker: dying, hostname: "b", duration: .seconds(600)).serverPID)
                }
                #expect(servers.count == 1, "\(servers)")
                let server = try #require(servers.first)
                let clients = [await a.backendPID, await b.backendPID]
                #expect(!clients.contains(server), "\(clients) \(server)")
                // A worker not configured for a pooler refuses such a URL at start.
                await #expect(throws: SessionPoolerError.self) { try await SessionPoolerError.check(a, serverPID: server) }
                let leases: Int = try await harness.admin.query(
                    """
                    SELECT count(*)::int AS n FROM tasker.worker_leases
                     WHERE worker_uuid IN ($1, $2) AND expires_at > clock_timestamp() + interval '500 seconds'
                    """, [alive, dying])[0].decode("n")
                #expect(leases == 2)

                // The claim's lease check, through the pooler (the statement's text, unnamed).
                let queue = QueueNames.workerQueue(namespace: harness.namespace)
                let task = try await harness.createTask(steps: ["dead_one", "dead_two", "live"])
                func claim(_ c: PostgresConnection, _ name: String, as worker: UUID) async throws -> (attempts: Int?, leaseHeld: Bool) {
                    try await harness.enqueue(task, name)
                    let msgID: Int64 = try await harness.admin.query("SELECT max(msg_id) AS id FROM pgmq.q_\(queue)")[0].decode("id")
                    let row = try await c.query(
                        ClaimStatement.functions.statement.sql,
                        [task[name], PostgresJSON(raw: ClaimStamp(worker: worker).metadata), queue, task.taskUUID, msgID])[0]
                    return (try row.decode("attempts", as: Int?.self), try row.decode("lease_held", as: Bool.self))
                }
                let live = try await claim(a, "live", as: alive)
                #expect(live.attempts == 1 && live.leaseHeld)
                let dead = try await claim(b, "dead_one", as: dying)
                #expect(dead.attempts == 1 && dead.leaseHeld)
                // The dying worker's lease ends (released through the pooler); its next claim is refused.
                try await WorkerLeaseRepository.release(b, worker: dying)
                let refused = try await claim(b, "dead_two", as: dying)
                #expect(refused.attempts == nil && !refused.leaseHeld)
                #expect(try await harness.state(task["dead_two"]) == "enqueued")

                // Crash recovery's scan, through the pooler: the dead worker's step only.
                let lost = try await a.query(RecoveryStatements.scan.sql, [10]).map { row throws(PostgresError) -> UUID in
                    try row.decode("step_uuid")
                }
                #expect(lost == [task["dead_one"]])
                await a.close()
                await b.close()
            }
        }
    }
}
