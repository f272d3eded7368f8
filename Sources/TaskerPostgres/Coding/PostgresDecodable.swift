import Foundation

/// A Swift type that can be read from a result cell in PostgreSQL's text format.
/// NULL decodes only into `Optional`; for every other type it is a decoding error naming the column.
public protocol PostgresDecodable: Sendable {
    static func decode(from cell: PostgresCell) throws(PostgresError) -> Self
}

extension String: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> String { try cell.text() }
}

extension Int: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Int {
        guard let value = Int(try cell.text()) else { throw cell.decodingError("Int") }
        return value
    }
}

extension Int64: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Int64 {
        guard let value = Int64(try cell.text()) else { throw cell.decodingError("Int64") }
        return value
    }
}

extension Int32: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Int32 {
        guard let value = Int32(try cell.text()) else { throw cell.decodingError("Int32") }
        return value
    }
}

extension Bool: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Bool {
        switch try cell.text() {
        case "t", "true": return true
        case "f", "false": return false
        default: throw cell.decodingError("Bool")
        }
    }
}

extension Double: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Double {
        let text = try cell.text()
        switch text {
        case "NaN": return .nan
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        default:
            guard let value = Double(text) else { throw cell.decodingError("Double") }
            return value
        }
    }
}

extension UUID: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> UUID {
        guard let value = UUID(uuidString: try cell.text()) else { throw cell.decodingError("UUID") }
        return value
    }
}

extension Date: PostgresDecodable {
    /// Reads `timestamptz`, and `timestamp` as naive UTC.
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Date {
        guard let value = PostgresTimestamp.parse(try cell.text()) else { throw cell.decodingError("Date") }
        return value
    }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Wrapped? {
        if cell.isNull { return nil }
        return try Wrapped.decode(from: cell)
    }
}

/// The raw bytes of a value (for `jsonb`: the JSON text as sent by the server).
public struct PostgresRawValue: PostgresDecodable, Equatable {
    public let bytes: [UInt8]
    public var string: String { String(decoding: bytes, as: UTF8.self) }
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> PostgresRawValue {
        guard let bytes = cell.bytes else { throw cell.decodingError("raw bytes") }
        return PostgresRawValue(bytes: bytes)
    }
}
