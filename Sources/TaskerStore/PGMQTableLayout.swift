import TaskerModel
import TaskerPostgres

/// The table layouts of a PGMQ queue (`pgmq.q_<queue>` and its archive `pgmq.a_<queue>`) that the
/// worker can address with static SQL instead of PGMQ's plpgsql functions, which build their SQL
/// with `format()` and `EXECUTE` it, so it is parsed and planned on every call (docs/benchmarks.md:
/// `pgmq.archive` 0.41 ms of a 1.2 ms claim).
///
/// Detected per queue from the catalog (`detect`): a layout is known only when the queue table and
/// the archive table have exactly these columns with these types, nothing more; anything else
/// (another PGMQ version, a column added by hand) keeps the functions.
package enum PGMQTableLayout: String, Sendable, Equatable {
    /// PGMQ ≥ 1.5 (1.13 here): `last_read_at` and `headers`.
    case withLastReadAt = "pgmq-1.5+"
    /// Older PGMQ with `headers` (added by migration 0003 when missing), without `last_read_at`.
    case withoutLastReadAt = "pgmq-legacy"

    /// The columns `pgmq.archive` moves from the queue table to the archive table.
    package var archivedColumns: String {
        switch self {
        case .withLastReadAt: "msg_id, vt, read_ct, enqueued_at, last_read_at, message, headers"
        case .withoutLastReadAt: "msg_id, vt, read_ct, enqueued_at, message, headers"
        }
    }

    /// The queue table's columns and types (`format_type`), in any order.
    var queueColumns: [String: String] {
        var columns = [
            "msg_id": "bigint", "read_ct": "integer", "enqueued_at": "timestamp with time zone",
            "vt": "timestamp with time zone", "message": "jsonb", "headers": "jsonb",
        ]
        if self == .withLastReadAt { columns["last_read_at"] = "timestamp with time zone" }
        return columns
    }

    /// The archive table's: the queue table's plus `archived_at`.
    var archiveColumns: [String: String] {
        queueColumns.merging(["archived_at": "timestamp with time zone"]) { current, _ in current }
    }

    /// The layout of `queue`'s two tables, or nil when the queue name is not one static SQL may
    /// name (`PGMQQueueTables`), a table is missing, or the columns are not a known layout.
    package static func detect(_ c: isolated PostgresConnection, queue: String) throws(PostgresError) -> PGMQTableLayout? {
        guard let tables = PGMQQueueTables(queue: queue) else { return nil }
        let rows = try c.query(
            """
            SELECT c.relname AS table_name, a.attname AS column_name,
                   format_type(a.atttypid, a.atttypmod) AS column_type
              FROM pg_catalog.pg_class c
              JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'pgmq'
              JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
             WHERE c.relname IN ($1::text, $2::text) AND c.relkind IN ('r', 'p')
            """, [tables.queueTableName, tables.archiveTableName])
        var queueColumns: [String: String] = [:]
        var archiveColumns: [String: String] = [:]
        for row in rows {
            let table: String = try row.decode("table_name")
            let column: String = try row.decode("column_name")
            let type: String = try row.decode("column_type")
            if table == tables.queueTableName { queueColumns[column] = type } else { archiveColumns[column] = type }
        }
        return [PGMQTableLayout.withLastReadAt, .withoutLastReadAt].first {
            $0.queueColumns == queueColumns && $0.archiveColumns == archiveColumns
        }
    }
}

/// A queue's two PGMQ tables as SQL may name them: only for a queue name PGMQ itself accepts and
/// that needs no quoting (ASCII letters, digits and `_`, at most 47 characters, PGMQ's
/// `validate_queue_name` limit); the table names are lower-cased as PGMQ's `format_table_name` does,
/// and quoted all the same. Queue names come from task templates and messages: any other name gets
/// nil (and the worker keeps PGMQ's functions for it, which reject or quote it themselves).
package struct PGMQQueueTables: Sendable, Equatable {
    package let queue: String
    /// `q_<queue>` (lower case), unquoted: for catalog lookups.
    let queueTableName: String
    /// `a_<queue>` (lower case), unquoted.
    let archiveTableName: String

    package init?(queue: String) {
        guard !queue.isEmpty, queue.utf8.count <= 47,
            queue.utf8.allSatisfy({
                $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
            })
        else { return nil }
        self.queue = queue
        queueTableName = "q_" + queue.lowercased()
        archiveTableName = "a_" + queue.lowercased()
    }

    /// `pgmq."q_<queue>"`.
    package var queueTable: String { "pgmq." + Self.quoted(queueTableName) }
    /// `pgmq."a_<queue>"`.
    package var archiveTable: String { "pgmq." + Self.quoted(archiveTableName) }

    /// A double-quoted SQL identifier (embedded quotes doubled; the validated names have none).
    static func quoted(_ identifier: String) -> String {
        "\"" + identifier.replacing("\"", with: "\"\"") + "\""
    }
}
