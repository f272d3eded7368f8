import Logging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The PGMQ reads of a queue intake, the same code for the worker and the orchestration: a queue
/// read in a batch, notified messages read by id in one round trip, and the archive of a message
/// settled outside its work's transaction (poison, a finished finalization request).
///
/// A read that fails is logged (at most every 10 s per reader) and answered with two catch-up reads
/// through the intake's `CatchUpSchedule`: one a second later, which finds the messages when the
/// read's transaction rolled back (the usual case), and one once the read's visibility timeout has
/// passed, which finds them when the read committed on the server after all (an answer lost with
/// its connection, or a statement abandoned after a cancel the server did not answer): then they
/// were hidden, not lost. So no intake, EventDrivenOnly's included, depends on a later notification
/// or poll tick for them. The caller gets nil and counts the failure its own way.
package struct QueueReader: Sendable {
    /// The pool every read and archive runs on.
    package let pool: PostgresConnectionPool
    private let catchUps: CatchUpSchedule
    private let logger: Logger
    private let failureLog = Throttle(interval: .seconds(10))

    /// Reads on `pool`; failures ask `catchUps` for a read of the queues a second later.
    package init(pool: PostgresConnectionPool, catchUps: CatchUpSchedule, logger: Logger) {
        self.pool = pool
        self.catchUps = catchUps
        self.logger = logger
    }

    /// Reads up to `quantity` visible messages of `queue`, hiding them for `visibilityTimeout`
    /// seconds; with `minAgeSeconds`/`maxAgeSeconds > 0` only messages at least/less than that old
    /// (`PGMQ.read`). Nil: the read failed (logged, catch-up scheduled). `lane`: the pool lane (the
    /// worker's poller reads on `.background`).
    package func read(
        _ queue: String, quantity: Int, visibilityTimeout: Int, minAgeSeconds: Int = 0, maxAgeSeconds: Int = 0,
        lane: PostgresPoolLane = .pipeline
    ) async -> [QueueMessage]? {
        do {
            return try await pool.withConnection(lane: lane) { c in
                try await PGMQ.read(
                    c, queue: queue, visibilityTimeout: visibilityTimeout, quantity: quantity,
                    minAgeSeconds: minAgeSeconds, maxAgeSeconds: maxAgeSeconds)
            }
        } catch {
            failed(
                "could not read the queue; reading it again soon", queue: queue, msgIDs: [], visibilityTimeout: visibilityTimeout,
                error: error)
            return nil
        }
    }

    /// Reads each of `msgIDs` of `queue` that is visible, hiding it for `visibilityTimeout` seconds,
    /// in ONE round trip (and, for more than one id, ONE transaction); the messages found, in
    /// `msgIDs` order. Nil: the read failed (logged, catch-up scheduled).
    package func read(_ queue: String, msgIDs: [Int64], visibilityTimeout: Int) async -> [QueueMessage]? {
        guard !msgIDs.isEmpty else { return [] }
        do {
            return try await pool.withConnection { c in
                try await PGMQ.readSpecific(c, queue: queue, msgIDs: msgIDs, visibilityTimeout: visibilityTimeout)
            }
        } catch {
            failed(
                "could not read notified messages; reading the queue again soon", queue: queue, msgIDs: msgIDs,
                visibilityTimeout: visibilityTimeout, error: error)
            return nil
        }
    }

    /// Archives `message` (PGMQ's ack); false when it was already gone or the archive failed
    /// (logged: the message comes back after its visibility timeout and is settled again).
    @discardableResult
    package func archive(_ message: QueueMessage) async -> Bool {
        do {
            return try await pool.withConnection { c in try await PGMQ.archive(c, queue: message.queue, msgID: message.msgID) }
        } catch {
            logger.warning(
                "could not archive a message; it comes back after its visibility timeout",
                metadata: ["queue": "\(message.queue)", "msg_id": "\(message.msgID)", "error": "\(error)"])
            return false
        }
    }

    private func failed(_ what: String, queue: String, msgIDs: [Int64], visibilityTimeout: Int, error: any Error) {
        if failureLog.allow() {
            var metadata: Logger.Metadata = ["queue": "\(queue.prefix(100))", "error": "\(error)"]
            if !msgIDs.isEmpty { metadata["msg_ids"] = "\(msgIDs.prefix(10).map(String.init).joined(separator: ","))" }
            logger.warning("\(what) (repeats are logged at most every 10 s)", metadata: metadata)
        }
        catchUps.schedule(after: .seconds(1))
        catchUps.schedule(after: .seconds(max(0, visibilityTimeout) + 1))
    }
}
