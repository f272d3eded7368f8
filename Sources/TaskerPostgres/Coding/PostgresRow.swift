import Foundation

/// A result column: its name and type OID.
public struct PostgresColumn: Sendable, Equatable {
    public let name: String
    public let typeOID: UInt32
}

/// The columns of one result, with a name index shared by all its rows.
final class PostgresColumnIndex: Sendable {
    let columns: [PostgresColumn]
    let positions: [String: Int]

    init(_ columns: [PostgresColumn]) {
        self.columns = columns
        var positions: [String: Int] = [:]
        for (index, column) in columns.enumerated() where positions[column.name] == nil {
            positions[column.name] = index
        }
        self.positions = positions
    }
}

/// The rows a statement returned, copied out of libpq's result.
public struct PostgresQueryResult: Sendable, RandomAccessCollection {
    public let rows: [PostgresRow]
    /// Rows affected by INSERT/UPDATE/DELETE (`PQcmdTuples`), 0 otherwise.
    public let affectedRows: Int
    let index: PostgresColumnIndex

    public var columns: [PostgresColumn] { index.columns }
    public var startIndex: Int { rows.startIndex }
    public var endIndex: Int { rows.endIndex }
    public subscript(position: Int) -> PostgresRow { rows[position] }
}

/// One row of a result. Cells are addressed by column name or position.
public struct PostgresRow: Sendable {
    let index: PostgresColumnIndex
    let values: [[UInt8]?]

    /// Whether the result has a column of this name.
    public func hasColumn(_ column: String) -> Bool { index.positions[column] != nil }

    /// The cell of the named column; throws `usage` if the result has no such column.
    public func cell(_ column: String) throws(PostgresError) -> PostgresCell {
        guard let position = index.positions[column] else {
            throw PostgresError(
                .usage,
                "result has no column \"\(column)\"; columns: "
                    + index.columns.map(\.name).joined(separator: ", "))
        }
        return cell(at: position)
    }

    public func cell(at position: Int) -> PostgresCell {
        PostgresCell(column: index.columns[position], bytes: values[position])
    }

    /// Decodes the named column.
    public func decode<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws(PostgresError) -> T {
        try T.decode(from: try cell(column))
    }

    /// Decodes the named `json`/`jsonb` column into a `Decodable` value.
    public func decodeJSON<T: Decodable>(
        _ column: String, as type: T.Type = T.self,
        decoder: JSONDecoder = JSONDecoder()
    ) throws(PostgresError) -> T {
        try cell(column).decodeJSON(type, decoder: decoder)
    }
}

/// One value of a row, in PostgreSQL's text format, or NULL.
public struct PostgresCell: Sendable {
    public let column: PostgresColumn
    /// The raw text bytes (for `jsonb`: the JSON document); nil for SQL NULL.
    public let bytes: [UInt8]?

    public var isNull: Bool { bytes == nil }

    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self) throws(PostgresError) -> T {
        try T.decode(from: self)
    }

    /// Decodes a `json`/`jsonb` value; NULL decodes only into an `Optional`. Stored JSON is
    /// untrusted (any role that can write the row, or data stored before a limit existed): a value
    /// nested deeper than `UntrustedJSON.maximumDepth` is refused before the recursive decoder runs.
    public func decodeJSON<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws(PostgresError) -> T {
        let data = Data(bytes ?? Array("null".utf8))
        do {
            try UntrustedJSON.checkDepth(data, what: "column \"\(column.name)\"")
        } catch {
            throw PostgresError(.decoding, "\(error)")
        }
        do {
            return try decoder.decode(T.self, from: data)
        } catch {
            throw decodingError("\(T.self) from JSON: \(error)")
        }
    }

    /// The text of a non-NULL cell.
    func text() throws(PostgresError) -> String {
        guard let bytes else { throw decodingError("a non-NULL value, found NULL") }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The error of a cell that does not hold `expected` (a `PostgresDecodable` conformance's
    /// refusal): names the column, its type and the value's first 80 bytes.
    public func decodingError(_ expected: String) -> PostgresError {
        let shown = bytes.map { String(decoding: $0.prefix(80), as: UTF8.self) } ?? "NULL"
        return PostgresError(
            .decoding,
            "column \"\(column.name)\" (type oid \(column.typeOID)): cannot decode "
                + "\(expected); value: \(shown)")
    }
}
