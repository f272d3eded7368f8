import Foundation
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerPostgres
@testable import TaskerWorker

@Suite("Connection pool", .timeLimit(.minutes(2)))
struct PostgresConnectionPoolTests {
    @Test func exhaustionWaitsThenTimesOutAndCountsTheError() async throws {
        try await withTestDatabase { db in
            let pool = PostgresConnectionPool(
                configuration: PostgresPoolConfiguration(
                    url: db.url, maxConnections: 2, minConnections: 0, acquireTimeout: .milliseconds(300),
                    slowAcquireThreshold: .milliseconds(20)))
            let first = try await pool.acquire()
            let second = try await pool.acquire()
            let error = await #expect(throws: PostgresError.self) { try await pool.acquire() }
            #expect(error?.kind == .acquireTimeout)
            var stats = await pool.statistics
            #expect(stats.active == 2)
            #expect(stats.acquireErrors == 1)
            #expect(stats.totalAcquires == 3)

            // A waiter gets the connection released while it waits.
            async let third = pool.acquire()
            try await Task.sleep(for: .milliseconds(50))
            await pool.release(first)
            let handedOver = try await third
            #expect(handedOver === first)
            await pool.release(second)
            await pool.release(handedOver)
            stats = await pool.statistics
            #expect(stats.active == 0)
            #expect(stats.idle == 2)
            #expect(stats.max == 2)
            #expect(stats.connectionsOpened == 2)
            #expect(stats.maxAcquireMs >= 40)
            #expect(stats.slowAcquires >= 1)  // the waiter (≥ 50 ms) and the timed-out one
            await pool.close()
        }
    }

    @Test func deadConnectionsAreReplaced() async throws {
        try await withTestDatabase { db in
            let pool = db.pool(maxConnections: 1)
            let pid: Int32 = try await pool.withConnection { await $0.backendPID }
            let admin = try await db.connect()
            try await admin.query("SELECT pg_terminate_backend($1)", [Int32(pid)])
            try await waitUntil { try await admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [Int32(pid)]).isEmpty }
            let rows = try await pool.query("SELECT pg_backend_pid() AS pid")
            #expect(try rows[0].decode("pid", as: Int32.self) != pid)
            let stats = await pool.statistics
            #expect(stats.connectionsReplaced == 1)
            #expect(stats.connectionsOpened == 2)
            await pool.close()
        }
    }

    @Test func aConnectionBrokenWhileLentIsNotReturnedToThePool() async throws {
        try await withTestDatabase { db in
            let pool = db.pool(maxConnections: 2)
            let admin = try await db.connect()
            await #expect(throws: PostgresError.self) {
                try await pool.withConnection { connection in
                    try await admin.query("SELECT pg_terminate_backend($1)", [Int32(await connection.backendPID)])
                    try await waitUntil { await !(connection.checkAlive()) }
                    try await connection.query("SELECT 1")
                }
            }
            // The broken connection counts until its close has finished (at most about a second).
            try await waitUntil(timeout: .seconds(5)) { await pool.statistics.active == 0 }
            let stats = await pool.statistics
            #expect(stats.idle == 0)
            #expect(stats.active == 0)
            #expect(stats.connectionsReplaced == 1)
            #expect(try await pool.query("SELECT 1 AS one")[0].decode("one", as: Int.self) == 1)
            await pool.close()
        }
    }

    @Test func transactionsRunOnPooledConnectionsAndMinimumIsKept() async throws {
        try await withTestDatabase { db in
            let pool = db.pool(maxConnections: 3, minConnections: 2)
            let run = Task { try await pool.run() }
            try await waitUntil { await pool.statistics.idle == 2 }
            try await pool.query("CREATE TABLE t (id int)")
            let count = try await pool.transaction { c in
                try c.query("INSERT INTO t VALUES (1), (2)")
                return try c.query("SELECT count(*) AS n FROM t")[0].decode("n", as: Int.self)
            }
            #expect(count == 2)
            run.cancel()
            _ = try? await run.value
            let closed = await #expect(throws: PostgresError.self) { try await pool.acquire() }
            #expect(closed?.kind == .shutdown)
        }
    }

    /// Issue #11: maintenance took the idle connections out to check them and counted the checked
    /// ones nowhere until it was done, so concurrent acquires opened more — 185 backends for a pool
    /// of 30. Here maintenance runs every few milliseconds under concurrent acquires on both lanes,
    /// and PostgreSQL's own count of the pool's backends never goes above the maximum.
    @Test func concurrentAcquiresDuringMaintenanceNeverOpenMoreBackendsThanTheMaximum() async throws {
        try await withTestDatabase { db in
            let name = "ceiling-\(UUID().uuidString.prefix(8))"
            let max = 4
            let pool = PostgresConnectionPool(
                configuration: PostgresPoolConfiguration(
                    url: db.url, maxConnections: max, minConnections: max, acquireTimeout: .seconds(30),
                    applicationName: name, maintenanceInterval: .milliseconds(2), operatorMaxConnections: 1))
            let run = Task { try await pool.run() }
            try await waitUntil { await pool.statistics.idle == max }
            let admin = try await db.connect()
            let watcher = Task {
                var highest = 0
                while !Task.isCancelled {
                    let rows = try await admin.query(
                        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1", [name])
                    highest = Swift.max(highest, try rows[0].decode("n", as: Int.self))
                }
                return highest
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in 0..<6 {
                    group.addTask {
                        for round in 0..<100 {
                            // Pauses leave connections idle, for maintenance to take out and check
                            // while the next acquires arrive.
                            let lane: PostgresPoolLane = (client + round) % 4 == 0 ? .operator : .pipeline
                            try await pool.query("SELECT 1", lane: lane)
                            try await Task.sleep(for: .milliseconds(1))
                        }
                    }
                }
                try await group.waitForAll()
            }
            watcher.cancel()
            let highest = try await watcher.value
            let stats = await pool.statistics
            #expect(highest <= max, "PostgreSQL saw \(highest) backends of a pool of \(max)")
            #expect(highest >= 1)
            #expect(stats.peakConnections <= max)
            #expect(stats.active + stats.idle <= max)
            #expect(stats.totalAcquires == 6 * 100)
            // None died, none aged out, none idled out (min = max): the first `max` served everything.
            #expect(stats.connectionsOpened == max, "opened \(stats.connectionsOpened) connections for a pool of \(max)")
            run.cancel()
            _ = try? await run.value
            await admin.close()
        }
    }

    /// The operator lane (health, templates, metrics) holds at most its budget; the pipeline gets
    /// the rest of the pool while probes wait.
    @Test func theOperatorLaneCannotTakeThePipelinesConnections() async throws {
        try await withTestDatabase { db in
            let pool = PostgresConnectionPool(
                configuration: PostgresPoolConfiguration(
                    url: db.url, maxConnections: 3, minConnections: 0, acquireTimeout: .milliseconds(300),
                    operatorMaxConnections: 1))
            let probe = try await pool.acquire(lane: .operator)
            let starved = await #expect(throws: PostgresError.self) { try await pool.acquire(lane: .operator) }
            #expect(starved?.kind == .acquireTimeout)
            let first = try await pool.acquire()
            let second = try await pool.acquire()
            #expect(await pool.statistics.operatorActive == 1)
            await pool.release(probe)
            let next = try await pool.acquire(lane: .operator)
            #expect(next === probe)
            for connection in [next, first, second] { await pool.release(connection) }
            await pool.close()
        }
    }
}
