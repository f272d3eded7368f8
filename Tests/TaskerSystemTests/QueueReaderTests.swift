import Logging
import Synchronization
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

/// `QueueReader`, the PGMQ reads of the worker's and the orchestration's intakes, on a real
/// database: notified ids read by id in one round trip and in the order named (ids not visible
/// left out), a batch read, the archive, and a failed read answered with a catch-up read.
@Suite("Queue reader", .timeLimit(.minutes(2)))
struct QueueReaderTests {
    static let queue = "worker_reader_queue"

    @Test func readsByIDInBatchesAndArchives() async throws {
        try await withTestDatabase { db in
            let admin = try await db.connect()
            try await PGMQ.create(admin, queue: Self.queue)
            var ids: [Int64] = []
            for n in 1...3 {
                ids.append(try await PGMQ.sendWithNotify(admin, queue: Self.queue, message: PostgresJSON(raw: #"{"n":\#(n)}"#)))
            }
            await admin.close()

            let pool = db.pool(maxConnections: 2)
            let schedule = CatchUpSchedule {}
            let reader = QueueReader(pool: pool, catchUps: schedule, logger: Logger(label: "test.queue-reader"))

            // By id: in the order named, an id that does not exist left out, then hidden.
            let named = try #require(await reader.read(Self.queue, msgIDs: [ids[2], 999_999, ids[0]], visibilityTimeout: 30))
            #expect(named.map(\.msgID) == [ids[2], ids[0]])
            #expect(try #require(await reader.read(Self.queue, msgIDs: [ids[2]], visibilityTimeout: 30)).isEmpty)
            #expect(try #require(await reader.read(Self.queue, msgIDs: [], visibilityTimeout: 30)).isEmpty)
            // The visibility timeout given is the one applied: 0 leaves a message visible at once.
            #expect(try #require(await reader.read(Self.queue, msgIDs: [ids[1]], visibilityTimeout: 0)).map(\.msgID) == [ids[1]])
            // A batch read takes what is still visible, no more than asked for.
            let none = try #require(await reader.read(Self.queue, quantity: 0, visibilityTimeout: 30))
            #expect(none.isEmpty)
            let batch = try #require(await reader.read(Self.queue, quantity: 10, visibilityTimeout: 30))
            #expect(batch.map(\.msgID) == [ids[1]])
            #expect(batch[0].readCount == 2)
            // Archived once; a second archive finds it gone.
            #expect(await reader.archive(batch[0]))
            #expect(!(await reader.archive(batch[0])))
            // Nothing failed, so no catch-up was asked for.
            #expect(schedule.pendingCount == 0)
            await pool.close()
        }
    }

    /// A read that fails gives nil (the caller counts it) and a catch-up read of the queues follows,
    /// by id or in a batch: no intake waits for a later notification for messages it could not read.
    @Test func aFailedReadIsAnsweredWithACatchUpRead() async throws {
        try await withTestDatabase { db in
            let catchUps = Atomic<Int>(0)
            let pool = db.pool(maxConnections: 1)
            let schedule = CatchUpSchedule { catchUps.add(1, ordering: .relaxed) }
            let reader = QueueReader(pool: pool, catchUps: schedule, logger: Logger(label: "test.queue-reader"))
            #expect(await reader.read("worker_missing_queue", quantity: 1, visibilityTimeout: 2) == nil)
            // One catch-up soon, one after the read's visibility timeout (in case the read committed after all).
            #expect(schedule.pendingCount == 2)
            try await waitUntil { catchUps.load(ordering: .relaxed) >= 2 }
            let before = catchUps.load(ordering: .relaxed)
            #expect(await reader.read("worker_missing_queue", msgIDs: [1, 2], visibilityTimeout: 30) == nil)
            try await waitUntil { catchUps.load(ordering: .relaxed) > before }
            await pool.close()
        }
    }
}
