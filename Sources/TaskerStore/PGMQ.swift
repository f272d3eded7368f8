import Foundation
import TaskerModel
import TaskerPostgres

extension QueueMessage {
    /// Reads one row; only the id and read count must decode: a body that does not is kept as
    /// `bodyError`, so that the one message is archived as poison and the others are processed.
    package init(queue: String, row: PostgresRow) throws(PostgresError) {
        var message = JSONValue.null
        var bodyError: String?
        do {
            message = try row.decode("message")
        } catch {
            bodyError = "\(error)"
        }
        self.init(
            queue: queue, msgID: try row.decode("msg_id"), readCount: try row.decode("read_ct"),
            message: message, bodyError: bodyError)
    }
}

/// The PGMQ calls the worker makes, with typed casts (PGMQ's functions are overloaded).
public enum PGMQ {
    /// The calls made for every step, prepared once per connection.
    enum Statements {
        static let read = PreparedStatement(
            "SELECT msg_id, read_ct, message FROM pgmq.read(queue_name => $1::text, vt => $2::integer, qty => $3::integer)")
        static let readSpecific = PreparedStatement(
            "SELECT msg_id, read_ct, message FROM tasker.pgmq_read_specific_message($1::text, $2::bigint, $3::integer)")
        static let setVisibilityTimeout = PreparedStatement("SELECT msg_id FROM pgmq.set_vt($1::text, $2::bigint, $3::integer)")
        static let archive = PreparedStatement("SELECT pgmq.archive($1::text, $2::bigint) AS archived")
        static let archiveBatch = PreparedStatement(
            "SELECT count(*)::int8 AS archived FROM pgmq.archive($1::text, $2::bigint[])")
        static let sendWithNotify = PreparedStatement(
            "SELECT tasker.pgmq_send_with_notify($1::text, $2::jsonb, $3::integer) AS msg_id")
    }

    /// Reads up to `quantity` visible messages, hiding them for `visibilityTimeout` seconds. With
    /// `minAgeSeconds > 0` only messages enqueued at least that long ago are read, with
    /// `maxAgeSeconds > 0` only messages enqueued less than that long ago (PGMQ's own `read` has no
    /// age filter, so this updates the queue table as `pgmq.read` does, leaving out PGMQ 1.13's
    /// `last_read_at`, which older PGMQ versions do not have).
    public static func read(
        _ c: isolated PostgresConnection, queue: String, visibilityTimeout: Int,
        quantity: Int, minAgeSeconds: Int = 0, maxAgeSeconds: Int = 0
    ) throws(PostgresError) -> [QueueMessage] {
        if minAgeSeconds <= 0 && maxAgeSeconds <= 0 {
            return try c.query(Statements.read, [queue, Int32(clamping: visibilityTimeout), Int32(clamping: quantity)])
                .map { row throws(PostgresError) in try QueueMessage(queue: queue, row: row) }
        }
        let table = try c.quoteIdentifier("q_" + queue.lowercased())
        return try c.query(
            """
            WITH ready AS (
                SELECT msg_id FROM pgmq.\(table)
                 WHERE vt <= clock_timestamp() AND enqueued_at <= clock_timestamp() - make_interval(secs => $3)
                   AND ($4 <= 0 OR enqueued_at > clock_timestamp() - make_interval(secs => $4))
                 ORDER BY msg_id LIMIT $2 FOR UPDATE SKIP LOCKED)
            UPDATE pgmq.\(table) q
               SET vt = clock_timestamp() + make_interval(secs => $1), read_ct = q.read_ct + 1
              FROM ready WHERE q.msg_id = ready.msg_id
            RETURNING q.msg_id, q.read_ct, q.message
            """,
            [
                Int32(clamping: visibilityTimeout), Int32(clamping: quantity), Int32(clamping: max(0, minAgeSeconds)),
                Int32(clamping: maxAgeSeconds),
            ]
        )
        .map { row throws(PostgresError) in try QueueMessage(queue: queue, row: row) }
    }

    /// Reads one message by id if it is visible (`tasker.pgmq_read_specific_message`).
    public static func readSpecific(
        _ c: isolated PostgresConnection, queue: String, msgID: Int64,
        visibilityTimeout: Int
    ) throws(PostgresError) -> QueueMessage? {
        try c.query(Statements.readSpecific, [queue, msgID, Int32(clamping: visibilityTimeout)])
            .first.map { row throws(PostgresError) in try QueueMessage(queue: queue, row: row) }
    }

    /// Reads each of `msgIDs` that is visible (`tasker.pgmq_read_specific_message` per id) in ONE
    /// round trip and, for more than one id, ONE transaction; the messages found, in `msgIDs` order.
    public static func readSpecific(
        _ c: isolated PostgresConnection, queue: String, msgIDs: [Int64],
        visibilityTimeout: Int
    ) throws(PostgresError) -> [QueueMessage] {
        guard msgIDs.count > 1 else {
            guard let msgID = msgIDs.first,
                let message = try readSpecific(c, queue: queue, msgID: msgID, visibilityTimeout: visibilityTimeout)
            else { return [] }
            return [message]
        }
        let timeout = Int32(clamping: visibilityTimeout)
        let reads = msgIDs.map { PipelineStatement.prepared(Statements.readSpecific, [queue, $0, timeout]) }
        let results = try c.pipeline([.plain("BEGIN")] + reads + [.plain("COMMIT")])
        var messages: [QueueMessage] = []
        for result in results.dropFirst().prefix(msgIDs.count) {
            for row in result { messages.append(try QueueMessage(queue: queue, row: row)) }
        }
        return messages
    }

    /// Sets a message's visibility timeout to `seconds` from now (0: visible at once).
    public static func setVisibilityTimeout(
        _ c: isolated PostgresConnection, queue: String, msgID: Int64,
        seconds: Int
    ) throws(PostgresError) {
        _ = try c.query(Statements.setVisibilityTimeout, [queue, msgID, Int32(clamping: seconds)])
    }

    /// Archives (acks) a message; false when it was already gone.
    @discardableResult
    public static func archive(_ c: isolated PostgresConnection, queue: String, msgID: Int64) throws(PostgresError) -> Bool {
        try c.query(Statements.archive, [queue, msgID])[0].decode("archived")
    }

    /// Archives several messages of one queue in one statement; returns how many were still there.
    @discardableResult
    public static func archive(_ c: isolated PostgresConnection, queue: String, msgIDs: [Int64]) throws(PostgresError) -> Int {
        let ids = PostgresArrayLiteral(msgIDs.map { String($0) })
        return Int(try c.query(Statements.archiveBatch, [queue, ids])[0].decode("archived", as: Int64.self))
    }

    /// Sends with Tasker's notification (`tasker.pgmq_send_with_notify`); returns the msg_id.
    @discardableResult
    public static func sendWithNotify(
        _ c: isolated PostgresConnection, queue: String, message: PostgresJSON,
        delaySeconds: Int = 0
    ) throws(PostgresError) -> Int64 {
        try c.query(Statements.sendWithNotify, [queue, message, Int32(clamping: delaySeconds)])[0].decode("msg_id")
    }

    /// Creates a queue unless `pgmq.meta` lists it already (idempotent), through
    /// `tasker.create_queue` (migration 0008): a `SECURITY DEFINER` function of the schema owner,
    /// so the queue is owned by the owner, never by the calling worker role, which has no CREATE
    /// on schema `pgmq` (`scripts/sql/worker-role.sql`). The function accepts only the queue names
    /// workers and orchestrations create (`worker_<ns>_queue`, `<ns>_domain_events[_dlq]`,
    /// `orchestration_*`).
    public static func create(_ c: isolated PostgresConnection, queue: String) throws(PostgresError) {
        try c.query("SELECT tasker.create_queue($1::text)", [queue])
    }

    /// Depth and oldest message age (`pgmq.metrics`) of each of `queues` that exists, in the order
    /// given; a queue that does not exist is skipped (so one missing queue never hides the others).
    public static func queueMetrics(_ c: isolated PostgresConnection, queues: [String]) throws(PostgresError) -> [QueueMetrics] {
        guard !queues.isEmpty else { return [] }
        // MATERIALIZED: the existence filter runs before `pgmq.metrics`, which raises on a missing queue.
        return try c.query(
            """
            WITH existing AS MATERIALIZED (
                SELECT q.name, q.position
                  FROM unnest(string_to_array($1::text, ',')) WITH ORDINALITY AS q(name, position)
                 WHERE EXISTS (SELECT 1 FROM pgmq.meta WHERE meta.queue_name = q.name))
            SELECT e.name AS queue_name, m.queue_length, m.oldest_msg_age_sec
              FROM existing e, LATERAL pgmq.metrics(e.name) AS m
             ORDER BY e.position
            """, [queues.joined(separator: ",")]
        )
        .map { row throws(PostgresError) in
            QueueMetrics(
                queue: try row.decode("queue_name"), depth: try row.decode("queue_length"),
                oldestMessageAgeSeconds: try row.decode("oldest_msg_age_sec"))
        }
    }

    /// One queue's `queueMetrics` entry; `oldestMessageAgeSeconds` is nil for an empty queue.
    public struct QueueMetrics: Sendable, Equatable {
        public var queue: String
        public var depth: Int64
        public var oldestMessageAgeSeconds: Int64?
    }
}
