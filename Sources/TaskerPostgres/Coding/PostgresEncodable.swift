import Foundation

/// A value that can be sent as a query parameter, in PostgreSQL's text format.
///
/// `postgresType` is the OID given to the server; `0` lets the server infer the type from the
/// statement (used for strings, so that `$1` can stand for `text`, `varchar` or a name alike).
public protocol PostgresEncodable: Sendable {
    /// The parameter's type OID, or 0 to let the server infer it.
    var postgresType: UInt32 { get }
    /// The text representation, or `nil` for SQL NULL.
    var postgresText: String? { get }
}

/// Well-known type OIDs (from `pg_type`).
public enum PostgresTypeOID {
    public static let bool: UInt32 = 16
    public static let bytea: UInt32 = 17
    public static let int8: UInt32 = 20
    public static let int2: UInt32 = 21
    public static let int4: UInt32 = 23
    public static let text: UInt32 = 25
    public static let json: UInt32 = 114
    public static let float4: UInt32 = 700
    public static let float8: UInt32 = 701
    public static let varchar: UInt32 = 1043
    public static let timestamp: UInt32 = 1114
    public static let timestamptz: UInt32 = 1184
    public static let numeric: UInt32 = 1700
    public static let uuid: UInt32 = 2950
    public static let jsonb: UInt32 = 3802
}

extension String: PostgresEncodable {
    public var postgresType: UInt32 { 0 }
    public var postgresText: String? { self }
}

extension Int: PostgresEncodable {
    public var postgresType: UInt32 { PostgresTypeOID.int8 }
    public var postgresText: String? { String(self) }
}

extension Int64: PostgresEncodable {
    public var postgresType: UInt32 { PostgresTypeOID.int8 }
    public var postgresText: String? { String(self) }
}

extension Int32: PostgresEncodable {
    public var postgresType: UInt32 { PostgresTypeOID.int4 }
    public var postgresText: String? { String(self) }
}

extension Bool: PostgresEncodable {
    public var postgresType: UInt32 { PostgresTypeOID.bool }
    public var postgresText: String? { self ? "t" : "f" }
}

extension Double: PostgresEncodable {
    public var postgresType: UInt32 { PostgresTypeOID.float8 }
    public var postgresText: String? {
        if isNaN { return "NaN" }
        if isInfinite { return self > 0 ? "Infinity" : "-Infinity" }
        return "\(self)"
    }
}

extension UUID: PostgresEncodable {
    public var postgresType: UInt32 { PostgresTypeOID.uuid }
    public var postgresText: String? { uuidString.lowercased() }
}

extension Date: PostgresEncodable {
    /// Sent as `timestamptz` in UTC with microseconds. PostgreSQL converts it when the column is a
    /// naive `timestamp` using the session time zone, which every connection sets to UTC.
    public var postgresType: UInt32 { PostgresTypeOID.timestamptz }
    public var postgresText: String? { PostgresTimestamp.format(self) }
}

extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    public var postgresType: UInt32 { self?.postgresType ?? 0 }
    public var postgresText: String? { self?.postgresText }
}

/// A `jsonb` parameter: either an `Encodable` value or raw JSON text.
public struct PostgresJSON: PostgresEncodable {
    public let text: String

    /// Raw JSON text, sent as is (the server validates it).
    public init(raw text: String) { self.text = text }

    /// Encodes `value` with `JSONEncoder`.
    public init<T: Encodable>(_ value: T, encoder: JSONEncoder = JSONEncoder()) throws {
        let data = try encoder.encode(value)
        self.text = String(decoding: data, as: UTF8.self)
    }

    public var postgresType: UInt32 { PostgresTypeOID.jsonb }
    public var postgresText: String? { text }
}

/// SQL NULL with no particular type.
public struct PostgresNull: PostgresEncodable {
    public init() {}
    public var postgresType: UInt32 { 0 }
    public var postgresText: String? { nil }
}
