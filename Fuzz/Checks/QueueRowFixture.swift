#if DEBUG
@testable import TaskerPostgres

/// A row as `pgmq.read` / `tasker.pgmq_read_specific_message` return it (`msg_id`, `read_ct`,
/// `message`), built without a database: the `message` cell holds the fuzzer's bytes as libpq's text.
public enum QueueRowFixture {
    public static let msgID: Int64 = 7
    public static let readCount = 2

    public static func row(message: [UInt8]?) -> PostgresRow {
        let columns = [
            PostgresColumn(name: "msg_id", typeOID: 20), PostgresColumn(name: "read_ct", typeOID: 23),
            PostgresColumn(name: "message", typeOID: 3802),
        ]
        return PostgresRow(
            index: PostgresColumnIndex(columns), values: [Array("\(msgID)".utf8), Array("\(readCount)".utf8), message])
    }
}
#endif
