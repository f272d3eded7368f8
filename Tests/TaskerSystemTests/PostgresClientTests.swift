import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerPostgres
@testable import TaskerWorker

@Suite("PostgreSQL client against a real server", .timeLimit(.minutes(2)))
struct PostgresClientTests {
    struct Payload: Codable, Equatable {
        let name: String
        let count: Int
        let tags: [String]
    }

    @Test func roundTripsEveryDecodedType() async throws {
        try await withTestDatabase { db in
            let connection = try await db.connect()
            let id = UUID()
            let moment = Date(timeIntervalSince1970: 1_790_000_000.123456)
            let payload = Payload(name: "ünïcode ✓", count: 3, tags: ["a", "b"])
            let row = try await connection.query(
                """
                SELECT $1::text AS t, $2::int8 AS big, $3::int4 AS small, $4::bool AS yes, $5::float8 AS d,
                       $6::uuid AS id, $7::timestamptz AS at, '2026-01-02 03:04:05.123456'::timestamp AS naive,
                       $8::jsonb AS doc, current_setting('search_path') AS path, current_setting('TimeZone') AS tz
                """, ["it's \"quoted\"", Int64.max, Int32(-7), true, 2.5, id, moment, try PostgresJSON(payload)])[0]
            #expect(try row.decode("t", as: String.self) == "it's \"quoted\"")
            #expect(try row.decode("big", as: Int64.self) == .max)
            #expect(try row.decode("small", as: Int32.self) == -7)
            #expect(try row.decode("small", as: Int.self) == -7)
            #expect(try row.decode("yes", as: Bool.self))
            #expect(try row.decode("d", as: Double.self) == 2.5)
            #expect(try row.decode("id", as: UUID.self) == id)
            let at = try row.decode("at", as: Date.self)
            #expect(abs(at.timeIntervalSince1970 - moment.timeIntervalSince1970) < 0.000_002)
            let naive = try row.decode("naive", as: Date.self)
            #expect(naive == PostgresTimestamp.parse("2026-01-02 03:04:05.123456+00"))
            #expect(naive.timeIntervalSince1970 == 1_767_323_045.123456)
            #expect(try row.decodeJSON("doc", as: Payload.self) == payload)
            let raw = try row.decode("doc", as: PostgresRawValue.self)
            #expect(raw.string.contains("\"tags\": [\"a\", \"b\"]"))
            #expect(try row.decode("path", as: String.self) == "tasker,public")
            #expect(try row.decode("tz", as: String.self) == "UTC")
        }
    }

    @Test func nullsDecodeOnlyIntoOptionals() async throws {
        try await withTestDatabase { db in
            let connection = try await db.connect()
            let row = try await connection.query(
                "SELECT NULL::text AS t, $1::int8 AS n, NULL::jsonb AS doc, $2::uuid AS u",
                [Optional<Int>.none, Optional<UUID>.none])[0]
            #expect(try row.decode("t", as: String?.self) == nil)
            #expect(try row.decode("n", as: Int?.self) == nil)
            #expect(try row.decode("u", as: UUID?.self) == nil)
            #expect(try row.decodeJSON("doc", as: Payload?.self) == nil)
            #expect(try row.cell("doc").isNull)
            let error = #expect(throws: PostgresError.self) { try row.decode("t", as: String.self) }
            #expect(error?.kind == .decoding)
            #expect(error?.message.contains("column \"t\"") == true)
            let missing = #expect(throws: PostgresError.self) { try row.decode("nope", as: String.self) }
            #expect(missing?.kind == .usage)
        }
    }

    @Test func serverErrorsCarrySQLStateDetailAndConstraint() async throws {
        try await withTestDatabase { db in
            let connection = try await db.connect()
            try await connection.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
            try await connection.query("INSERT INTO t VALUES ($1, $2)", [Int32(1), "a"])
            let duplicate = await #expect(throws: PostgresError.self) {
                try await connection.query("INSERT INTO t VALUES ($1, $2)", [Int32(1), "b"])
            }
            #expect(duplicate?.sqlState == "23505")
            #expect(duplicate?.isUniqueViolation == true)
            #expect(duplicate?.isConnectionLoss == false)
            #expect(duplicate?.constraint == "t_pkey")
            #expect(duplicate?.detail?.contains("(id)=(1)") == true)
            #expect(duplicate?.table == "t")
            let syntax = await #expect(throws: PostgresError.self) { try await connection.query("SELEC 1") }
            #expect(syntax?.sqlState == "42601")
            #expect(syntax?.kind == .server)
            // The connection is still usable after errors.
            #expect(try await connection.query("SELECT count(*) AS n FROM t")[0].decode("n", as: Int.self) == 1)
        }
    }

    @Test func lostConnectionIsDistinguishableFromServerErrors() async throws {
        try await withTestDatabase { db in
            let victim = try await db.connect()
            let killer = try await db.connect()
            let pid = await victim.backendPID
            try await killer.query("SELECT pg_terminate_backend($1)", [Int32(pid)])
            // Wait until the server has ended the session, then use it.
            try await waitUntil { try await killer.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [Int32(pid)]).isEmpty }
            let error = await #expect(throws: PostgresError.self) { try await victim.query("SELECT 1") }
            #expect(error?.isConnectionLoss == true)
            #expect(error?.isUniqueViolation == false)
            #expect(await victim.isConnected == false)
        }
    }

    @Test func transactionsCommitAndRollBackOnAnyError() async throws {
        struct Abort: Error {}
        try await withTestDatabase { db in
            let connection = try await db.connect()
            try await connection.execute("CREATE TABLE t (id int PRIMARY KEY)")
            try await connection.transaction { c in try c.query("INSERT INTO t VALUES (1)") }
            await #expect(throws: Abort.self) {
                try await connection.transaction { c in
                    try c.query("INSERT INTO t VALUES (2)")
                    throw Abort()
                }
            }
            await #expect(throws: PostgresError.self) {
                try await connection.transaction { c in
                    try c.query("INSERT INTO t VALUES (3)")
                    try c.query("INSERT INTO t VALUES (1)")  // 23505
                }
            }
            let ids = try await connection.query("SELECT id FROM t ORDER BY id").map { try $0.decode("id", as: Int.self) }
            #expect(ids == [1])
            #expect(await connection.isIdle)
        }
    }

    @Test func notificationsArriveOnQuotedDottedChannels() async throws {
        try await withTestDatabase { db in
            let listener = try await db.connect()
            let sender = try await db.connect()
            try await listener.listen("pgmq_message_ready.payments")
            try await sender.query("SELECT pg_notify('pgmq_message_ready.payments', 'hello')")
            try await sender.query("SELECT pg_notify('pgmq_message_ready.other', 'not for us')")
            let notes = try await listener.waitForNotifications(timeout: .seconds(5))
            #expect(notes.map(\.channel) == ["pgmq_message_ready.payments"])
            #expect(notes.first?.payload == "hello")
            #expect(notes.first?.backendPID == (await sender.backendPID))
            // A wait with nothing to receive times out empty.
            #expect(try await listener.waitForNotifications(timeout: .milliseconds(50)).isEmpty)
        }
    }

    @Test func interruptEndsAWaitAtOnce() async throws {
        try await withTestDatabase { db in
            let connection = try await db.connect()
            try await connection.listen("quiet")
            let started = ContinuousClock.now
            async let notes = connection.waitForNotifications(timeout: .seconds(30))
            try await Task.sleep(for: .milliseconds(100))
            connection.interrupt()
            #expect(try await notes.isEmpty)
            #expect(started.duration(to: .now) < .seconds(10))
        }
    }
}
