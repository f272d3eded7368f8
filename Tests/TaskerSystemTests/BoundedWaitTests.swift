import Foundation
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres

/// Every wait on the database is bounded: the session `statement_timeout` / `lock_timeout` from
/// `[common.database]`, `PQcancel` when the waiting task is cancelled (and the connection abandoned
/// when the server does not answer), connection attempts bounded by `connect_timeout_seconds`.
@Suite("Bounded database waits", .timeLimit(.minutes(2)))
struct BoundedWaitTests {
    static let limits = PostgresSessionLimits(statementTimeout: .milliseconds(300), lockTimeout: .milliseconds(200))

    @Test func aStatementLongerThanTheStatementTimeoutFailsNamingIt() async throws {
        try await withTestDatabase { db in
            let connection = try await PostgresConnection.connect(url: db.url, applicationName: "bounded-stmt", limits: Self.limits)
            let error = await #expect(throws: PostgresError.self) { try await connection.query("SELECT pg_sleep(5)") }
            #expect(error?.timeout == .statement)
            #expect(error?.description.contains("statement_timeout") == true, "\(String(describing: error))")
            // The connection stays usable, and a transaction's own setting (the claim's
            // set_config(…, true)) still overrides the session's for that transaction.
            let slow = try await connection.transaction { c in
                try c.query("SELECT set_config('statement_timeout', '5000', true)")
                return try c.query("SELECT pg_sleep(0.5), current_setting('statement_timeout') AS t")[0].decode("t", as: String.self)
            }
            #expect(slow == "5s")
            #expect(try await connection.query("SHOW statement_timeout")[0].decode("statement_timeout", as: String.self) == "300ms")
            await connection.close()
        }
    }

    @Test func aLockWaitLongerThanTheLockTimeoutFails() async throws {
        try await withTestDatabase { db in
            let holder = try await db.connect(applicationName: "bounded-holder")
            try await holder.query("SELECT pg_advisory_lock(4242)")
            let waiter = try await PostgresConnection.connect(url: db.url, applicationName: "bounded-lock", limits: Self.limits)
            let error = await #expect(throws: PostgresError.self) { try await waiter.query("SELECT pg_advisory_lock(4242)") }
            #expect(error?.timeout == .lock)
            #expect(error?.sqlState == "55P03")
            #expect(error?.description.contains("lock_timeout") == true, "\(String(describing: error))")
            await holder.close()
            await waiter.close()
        }
    }

    /// The pool's connections (and so the worker's and orchestration's) start with the limits of
    /// `[common.database]`.
    @Test func pooledConnectionsGetTheConfiguredLimits() async throws {
        try await withTestDatabase { db in
            var database = CommonConfiguration.DatabaseSettings()
            database.url = db.url
            database.statementTimeoutMs = 1234
            database.lockTimeoutMs = 567
            database.connectTimeoutSeconds = 3
            let configuration = PostgresPoolConfiguration(database: database, applicationName: "bounded-pool")
            #expect(configuration.connectTimeout == .seconds(3))
            let pool = PostgresConnectionPool(configuration: configuration)
            let row = try await pool.query("SELECT current_setting('statement_timeout') AS s, current_setting('lock_timeout') AS l")[0]
            #expect(try row.decode("s", as: String.self) == "1234ms")
            #expect(try row.decode("l", as: String.self) == "567ms")
            await pool.close()
        }
    }

    /// A task cancelled while its statement runs: `PQcancel` ends the statement on the server, the
    /// task gets a `cancelled` error within about a second (not the 30 s of the statement), and the
    /// pooled connection stays usable.
    @Test func cancellingTheWaitingTaskCancelsTheStatementOnTheServer() async throws {
        try await withTestDatabase { db in
            let pool = PostgresConnectionPool(
                configuration: PostgresPoolConfiguration(
                    url: db.url, maxConnections: 1, minConnections: 0, applicationName: "bounded-cancel"))
            let task = Task { try await pool.query("SELECT pg_sleep(30)") }
            let admin = try await db.connect()
            let activeSleeps = {
                try await admin.query(
                    """
                    SELECT count(*) AS n FROM pg_stat_activity
                     WHERE application_name = 'bounded-cancel' AND state = 'active' AND query LIKE '%pg_sleep(30)%'
                    """)[0].decode("n", as: Int.self)
            }
            try await waitUntil(timeout: .seconds(10)) { try await activeSleeps() == 1 }
            guard let (error, took) = await Self.cancel(task) else { return }
            #expect(error.kind == .cancelled, "\(error)")
            #expect(took < .seconds(5), "the cancelled statement returned after \(took)")
            print("cancellation latency (PQcancel): \(took)")
            #expect(try await activeSleeps() == 0)
            // The same (only) connection serves the next statement.
            #expect(try await pool.query("SELECT 1 AS one")[0].decode("one", as: Int.self) == 1)
            #expect(await pool.statistics.connectionsReplaced == 0)
            await pool.close()
            await admin.close()
        }
    }

    /// The server (or the network) does not answer at all: a cancelled task still gets its answer
    /// within about a second (`PostgresConnection.cancelGrace`), and the connection is closed (the
    /// statement's outcome is unknown, as for any connection lost mid-statement).
    @Test func aCancelledStatementOnABlackHoledConnectionIsAbandoned() async throws {
        try await withTestDatabase { db in
            let proxy = try AnswerLosingProxy(databaseURL: db.url)
            defer { proxy.close() }
            let connection = try await PostgresConnection.connect(url: proxy.url, applicationName: "bounded-hole")
            proxy.blackHole()
            let task = Task { try await connection.cancellable { try await connection.query("SELECT 1") } }
            try await Task.sleep(for: .milliseconds(200))
            guard let (error, took) = await Self.cancel(task) else { return }
            #expect(error.kind == .connectionClosed && error.leavesOutcomeUnknown, "\(error)")
            #expect(error.message.contains("cancelled"), "\(error)")
            #expect(took < .seconds(5), "the abandoned statement returned after \(took)")
            print("cancellation latency (black-holed, abandoned): \(took)")
            #expect(await connection.isConnected == false)
        }
    }

    /// A connection attempt to a host that accepts and never answers gives up after the connect timeout.
    @Test func aConnectToABlackHoledHostGivesUpAfterTheConnectTimeout() async throws {
        try await withTestDatabase { db in
            let proxy = try AnswerLosingProxy(databaseURL: db.url)
            defer { proxy.close() }
            proxy.blackHole()
            let started = ContinuousClock.now
            let error = await #expect(throws: PostgresError.self) {
                try await PostgresConnection.connect(url: proxy.url, connectTimeout: .seconds(1))
            }
            #expect(error?.kind == .connectionFailed)
            #expect(started.duration(to: .now) < .seconds(10))
        }
    }

    /// Against the server: while broken connections are replaced over and over (each given back
    /// inside a transaction, so the pool closes it), the pool's backends never exceed its maximum,
    /// counted by `application_name` in `pg_stat_activity` and by the pool's own peak.
    @Test func replacementsNeverExceedTheMaximumOnTheServer() async throws {
        try await withTestDatabase { db in
            let application = "bounded-replace"
            let pool = PostgresConnectionPool(
                configuration: PostgresPoolConfiguration(url: db.url, maxConnections: 2, minConnections: 0, applicationName: application))
            let admin = try await db.connect()
            let done = TestFlag()
            let sampler = Task {
                var peak = 0
                while !done.value {
                    let n: Int = try await admin.query(
                        "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1", [application])[0].decode("n")
                    peak = max(peak, n)
                }
                return peak
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<4 {
                    group.addTask {
                        for round in 0..<15 {
                            try await pool.withConnection { c in
                                // Every other use leaves a transaction open: the pool closes that
                                // connection on release and opens a replacement for the next caller.
                                if (round + lane) % 2 == 0 { try await c.query("BEGIN") }
                                try await c.query("SELECT 1")
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            done.set(true)
            let peak = try await sampler.value
            let statistics = await pool.statistics
            #expect(statistics.connectionsReplaced >= 10)
            #expect(statistics.peakConnections <= 2)
            #expect(peak <= 2, "the server saw \(peak) backends of a pool of 2")
            await pool.close()
            await admin.close()
        }
    }

    /// Cancels `task` (a statement waiting in it) and returns the `PostgresError` it ended with and
    /// how long that took after the cancel; nil (with an issue recorded) when it ended otherwise.
    static func cancel<T: Sendable>(_ task: Task<T, any Error>) async -> (PostgresError, Duration)? {
        let cancelled = ContinuousClock.now
        task.cancel()
        let result = await task.result
        let took = cancelled.duration(to: .now)
        guard case .failure(let error as PostgresError) = result else {
            Issue.record("expected a cancelled error, got \(result)")
            return nil
        }
        return (error, took)
    }
}
