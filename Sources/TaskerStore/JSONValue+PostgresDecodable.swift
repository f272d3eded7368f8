import TaskerModel
import TaskerPostgres

extension JSONValue: PostgresDecodable {
    /// Reads a `json`/`jsonb` cell; SQL NULL becomes `.null`.
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> JSONValue {
        if cell.isNull { return .null }
        return try cell.decodeJSON(JSONValue.self)
    }
}
