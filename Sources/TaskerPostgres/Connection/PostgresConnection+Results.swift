import CLibPQ
import Foundation

extension PostgresConnection {
    static func copyRows(_ result: OpaquePointer) -> PostgresQueryResult {
        let fieldCount = Int(PQnfields(result))
        let rowCount = Int(PQntuples(result))
        var columns: [PostgresColumn] = []
        columns.reserveCapacity(fieldCount)
        for field in 0..<fieldCount {
            columns.append(
                PostgresColumn(
                    name: String(cString: PQfname(result, Int32(field))),
                    typeOID: PQftype(result, Int32(field))))
        }
        let index = PostgresColumnIndex(columns)
        var rows: [PostgresRow] = []
        rows.reserveCapacity(rowCount)
        for row in 0..<rowCount {
            var values: [[UInt8]?] = []
            values.reserveCapacity(fieldCount)
            for field in 0..<fieldCount {
                if PQgetisnull(result, Int32(row), Int32(field)) == 1 {
                    values.append(nil)
                } else {
                    let length = Int(PQgetlength(result, Int32(row), Int32(field)))
                    let pointer = UnsafeRawPointer(PQgetvalue(result, Int32(row), Int32(field))!)
                    values.append(Array(UnsafeRawBufferPointer(start: pointer, count: length)))
                }
            }
            rows.append(PostgresRow(index: index, values: values))
        }
        let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
        return PostgresQueryResult(rows: rows, affectedRows: affected, index: index)
    }

    static func serverError(_ result: OpaquePointer, sql: String) -> PostgresError {
        func field(_ code: Int32) -> String? {
            PQresultErrorField(result, code).map { String(cString: $0) }
        }
        let primary =
            field(CLIBPQ_DIAG_MESSAGE_PRIMARY)
            ?? String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
        return PostgresError(
            .server, primary,
            sqlState: field(CLIBPQ_DIAG_SQLSTATE), detail: field(CLIBPQ_DIAG_MESSAGE_DETAIL),
            hint: field(CLIBPQ_DIAG_MESSAGE_HINT), constraint: field(CLIBPQ_DIAG_CONSTRAINT_NAME),
            table: field(CLIBPQ_DIAG_TABLE_NAME), column: field(CLIBPQ_DIAG_COLUMN_NAME),
            query: shorten(sql))
    }

    static func errorMessage(_ conn: OpaquePointer) -> String {
        String(cString: PQerrorMessage(conn)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func shorten(_ sql: String) -> String {
        let flat = sql.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .joined(separator: " ")
        return flat.count > 200 ? String(flat.prefix(200)) + "…" : flat
    }
}
