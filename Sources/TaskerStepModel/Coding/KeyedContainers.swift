import Foundation
import TaskerText

// Coding helpers shared by the wire types (templates, handler definitions, results).

extension KeyedEncodingContainer {
    /// Writes `value`, or an explicit `null` when it is nil (serde's behaviour for `Option` fields
    /// without `skip_serializing_if`).
    package mutating func encodeOrNull<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
}

extension KeyedDecodingContainer {
    /// Decodes an `Option<serde_json::Value>` field: missing or `null` → nil.
    package func decodeOptionalJSON(forKey key: Key) throws -> JSONValue? {
        guard let value = try decodeIfPresent(JSONValue.self, forKey: key) else { return nil }
        return value == .null ? nil : value
    }

    /// Decodes a JSON object field (`HashMap<String, Value>` upstream); missing or `null` → `{}`.
    package func decodeJSONObject(forKey key: Key) throws -> JSONValue {
        guard let value = try decodeIfPresent(JSONValue.self, forKey: key), value != .null else {
            return .emptyObject
        }
        guard case .object = value else {
            throw DecodingError.typeMismatch(
                [String: JSONValue].self,
                DecodingError.Context(
                    codingPath: codingPath + [key], debugDescription: "expected a map"))
        }
        return value
    }

    /// Decodes a non-negative integer (a Rust `u32`/`u64` field).
    package func decodeUnsigned(forKey key: Key) throws -> Int {
        let value = try decode(Int.self, forKey: key)
        guard value >= 0 else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self,
                debugDescription: "expected a non-negative integer, got \(value)")
        }
        return value
    }

    /// Like `decodeUnsigned`, for an optional field.
    package func decodeUnsignedIfPresent(forKey key: Key) throws -> Int? {
        guard let value = try decodeIfPresent(Int.self, forKey: key) else { return nil }
        guard value >= 0 else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self,
                debugDescription: "expected a non-negative integer, got \(value)")
        }
        return value
    }
}
