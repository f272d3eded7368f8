import Foundation

/// The one nesting limit for JSON that comes from outside the process: request bodies, queue and
/// broker messages, NOTIFY payloads, `json`/`jsonb` read back from the database, results a foreign
/// runtime hands over. Foundation's `JSONDecoder` recurses once per nesting level (about 17 frames
/// each) and only refuses past 512 levels, which is far more than a 1 MiB thread stack (every
/// database connection's) can hold: nesting of 365–510 levels killed the process. So every decode of
/// untrusted JSON first counts the nesting with `checkDepth`, a linear scan that recurses on nothing,
/// and refuses anything deeper than `maximumDepth` before the recursive decoder sees it.
///
/// Two figures, one rule:
/// - `maximumDepth` (128, serde_json's own limit, so upstream's Rust worker reads no deeper either):
///   the most nesting any document may have when it is read.
/// - `maximumValueDepth` (120): the most a document that *brings* a value into Tasker may have (a
///   task request's body, a handler's result document). Tasker wraps those values in envelopes of its
///   own (a dependency's result inside `dependency_results`, a step inside the FFI step event), which
///   add at most `maximumDepth - maximumValueDepth` levels, so whatever was accepted is readable
///   everywhere it travels afterwards.
///
/// Depth counts arrays and objects: `1` is `[]` or `{}`, `{"a": [1]}` is 2, a scalar is 0.
public enum UntrustedJSON {
    /// The most nesting of arrays and objects a JSON document may have when it is read.
    public static let maximumDepth = 128
    /// The most nesting a document that brings a new value in (a task request, a result) may have.
    public static let maximumValueDepth = 120

    /// The nesting of `bytes` (UTF-8 JSON), counted up to `limit + 1` and no further. Linear in the
    /// length, no recursion, no allocation; strings (with their escapes) are skipped, so brackets in
    /// them do not count. It does not validate the JSON: the decoder that runs next does.
    public static func depth(
        of bytes: UnsafeRawBufferPointer, stoppingAfter limit: Int = maximumDepth
    ) -> (
        depth: Int, offset: Int?
    ) {
        var depth = 0
        var deepest = 0
        var inString = false
        var escaped = false
        for offset in 0..<bytes.count {
            let byte = bytes[offset]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > deepest {
                    deepest = depth
                    if deepest > limit { return (deepest, offset) }
                }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth = max(0, depth - 1)
            default:
                break
            }
        }
        return (deepest, nil)
    }

    /// Refuses `bytes` when arrays and objects nest deeper than `limit` in them; `what` names the
    /// document in the error (e.g. "the task request body", "column context").
    public static func checkDepth(
        _ bytes: some ContiguousBytes, limit: Int = maximumDepth, what: String
    ) throws(JSONNestingError) {
        let found = bytes.withUnsafeBytes { depth(of: $0, stoppingAfter: limit) }
        if let offset = found.offset {
            throw JSONNestingError(what: what, limit: limit, byteOffset: offset)
        }
    }

    /// `checkDepth`, then `JSONDecoder`: the one way to decode untrusted JSON. Throws
    /// `JSONNestingError` for too deep a document, else what the decoder throws.
    public static func decode<T: Decodable>(
        _ type: T.Type = T.self, from data: Data, limit: Int = maximumDepth, what: String,
        decoder: JSONDecoder = JSONDecoder()
    ) throws -> T {
        try checkDepth(data, limit: limit, what: what)
        return try decoder.decode(T.self, from: data)
    }

    /// `decode` of a string's UTF-8.
    public static func decode<T: Decodable>(
        _ type: T.Type = T.self, from text: String, limit: Int = maximumDepth, what: String
    ) throws -> T {
        try decode(T.self, from: Data(text.utf8), limit: limit, what: what)
    }
}

/// A JSON document nested deeper than the limit (`UntrustedJSON`): refused before it was decoded.
public struct JSONNestingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The document, as the caller named it.
    public let what: String
    /// The limit it went past.
    public let limit: Int
    /// The byte offset of the `[` or `{` that opened level `limit + 1`.
    public let byteOffset: Int

    public init(what: String, limit: Int, byteOffset: Int) {
        self.what = what
        self.limit = limit
        self.byteOffset = byteOffset
    }

    public var description: String {
        "\(what): arrays and objects are nested more than \(limit) levels deep "
            + "(level \(limit + 1) opens at byte \(byteOffset)); refused before decoding"
    }
}
