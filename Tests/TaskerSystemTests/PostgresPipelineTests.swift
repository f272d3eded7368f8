import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerPostgres
@testable import TaskerWorker

/// Prepared statements and pipelines (the step path's round-trip savings) against a real server.
@Suite("PostgreSQL prepared statements and pipelines", .timeLimit(.minutes(2)))
struct PostgresPipelineTests {
    static let add = PreparedStatement("SELECT $1::int8 + $2::int8 AS sum")

    @Test func aPreparedStatementIsPreparedOnceAndReused() async throws {
        try await withTestDatabase { db in
            let connection = try await db.connect()
            for n in 0..<3 {
                let sum: Int64 = try await connection.query(Self.add, [Int64(n), Int64(10)])[0].decode("sum")
                #expect(sum == Int64(n) + 10)
            }
            let prepared: Int = try await connection.query(
                "SELECT count(*) AS n FROM pg_prepared_statements WHERE name = $1", [Self.add.name])[0].decode("n")
            #expect(prepared == 1)
            #expect(Self.add.name == PreparedStatement(Self.add.sql).name)
            #expect(Self.add.name != PreparedStatement("SELECT 1").name)
            await connection.close()
        }
    }

    @Test func aPipelineReturnsOneResultPerStatementInOrder() async throws {
        try await withTestDatabase { db in
            let connection = try await db.connect()
            try await connection.execute("CREATE TABLE pipelined (n int8)")
            // The same statement twice in one pipeline, before it was ever prepared on this connection.
            let results = try await connection.pipeline([
                .plain("BEGIN"),
                .prepared(Self.add, [Int64(1), Int64(2)]),
                .prepared(Self.add, [Int64(3), Int64(4)]),
                .plain("INSERT INTO pipelined VALUES (1)"),
                .plain("COMMIT"),
            ])
            #expect(results.count == 5)
            #expect(try results[1][0].decode("sum", as: Int64.self) == 3)
            #expect(try results[2][0].decode("sum", as: Int64.self) == 7)
            #expect(try await connection.query("SELECT count(*) AS n FROM pipelined")[0].decode("n", as: Int.self) == 1)
            #expect(await connection.isIdle)
            await connection.close()
        }
    }

    @Test func anErrorInAPipelineRollsItsTransactionBackAndLeavesTheConnectionUsable() async throws {
        try await withTestDatabase { db in
            let connection = try await db.connect()
            try await connection.execute("CREATE TABLE pipelined (n int8 PRIMARY KEY)")
            await #expect(throws: PostgresError.self) {
                try await connection.pipeline([
                    .plain("BEGIN"),
                    .plain("INSERT INTO pipelined VALUES (1)"),
                    .plain("INSERT INTO pipelined VALUES (1)"),  // unique violation
                    .plain("INSERT INTO pipelined VALUES (2)"),
                    .plain("COMMIT"),
                ])
            }
            #expect(await connection.isIdle)
            #expect(connection.isReusable)
            #expect(try await connection.query("SELECT count(*) AS n FROM pipelined")[0].decode("n", as: Int.self) == 0)
            #expect(try await connection.query(Self.add, [Int64(2), Int64(2)])[0].decode("sum", as: Int64.self) == 4)
            await connection.close()
        }
    }
}

extension PostgresPipelineTests {
    /// A table changed under a prepared statement (0A000) or a session that lost its statements
    /// (26000): the connection closes itself, so the pool replaces it with a fresh session instead
    /// of lending one whose statements keep failing.
    @Test func aStalePreparedStatementClosesTheConnectionAndAFreshOneWorks() async throws {
        try await withTestDatabase { db in
            let admin = try await db.connect()
            try await admin.execute("CREATE TABLE stale_probe (a int); INSERT INTO stale_probe VALUES (1)")
            let everything = PreparedStatement("SELECT * FROM stale_probe")
            let pool = db.pool(maxConnections: 1)
            _ = try await pool.withConnection { try await $0.query(everything) }
            try await admin.execute("ALTER TABLE stale_probe ADD COLUMN b int")
            await #expect(throws: PostgresError.self) {
                try await pool.withConnection { try await $0.query(everything) }
            }
            let rows = try await pool.withConnection { try await $0.query(everything) }
            #expect(try rows[0].decode("a", as: Int.self) == 1)
            #expect(await pool.statistics.connectionsReplaced == 1)

            // The same through a pipeline, with the session's statements dropped behind its back.
            let pid: Int32 = try await pool.withConnection { connection in
                try await connection.execute("DEALLOCATE ALL")
                return await connection.backendPID
            }
            await #expect(throws: PostgresError.self) {
                try await pool.withConnection { try await $0.pipeline([.plain("BEGIN"), .prepared(everything, []), .plain("COMMIT")]) }
            }
            let after: Int32 = try await pool.withConnection { connection in
                _ = try await connection.pipeline([.prepared(everything, [])])
                return await connection.backendPID
            }
            #expect(after != pid)
            await pool.close()
            await admin.close()
        }
    }
}
