import Foundation
import TaskerHandlerSDK
import TaskerModel

/// JSON coding of the API bodies: timestamps as chrono writes a `DateTime<Utc>`
/// (`2026-03-21T21:16:08.123456Z`); keys come from each model's `CodingKeys`.
package enum APIJSON {
    /// An encoder for API bodies (a new one per call: `JSONEncoder` is not `Sendable`).
    static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(ResultTimestamp.string(date))
        }
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }

    /// A decoder for API bodies (tests and clients).
    static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = ResultTimestamp.parse(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 timestamp: \(text)")
            }
            return date
        }
        return decoder
    }

    /// `value` as JSON bytes (keys sorted when `sortedKeys`); `JSONFloat`s written as floats.
    package static func encode(_ value: some Encodable, sortedKeys: Bool = false) throws -> Data {
        let encoder = makeEncoder()
        if sortedKeys { encoder.outputFormatting.insert(.sortedKeys) }
        return JSONFloat.finish(try encoder.encode(value))
    }
}

/// A `Double` written as serde writes an `f64`: always with a fraction (`4.0`, not `4`, which
/// `JSONEncoder` writes for an integral value and a client reads as an integer). Encoded as a
/// marked string that `APIJSON.encode` turns into the number; the marker holds a per-process random
/// UUID after a private-use character, so no string of a request or a template can contain it.
struct JSONFloat: Encodable, Sendable {
    package var value: Double

    package init(_ value: Double) { self.value = value }

    static let marker = "\u{E000}tasker-float-\(UUID().uuidString):"

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        guard value.isFinite, value == value.rounded(), abs(value) < 1e15 else {
            try container.encode(value)
            return
        }
        try container.encode(Self.marker + String(Int64(value)))
    }

    /// `data` with every marked string (`"<marker>4"`) replaced by its float (`4.0`).
    static func finish(_ data: Data) -> Data {
        let opening = "\"" + marker
        guard let text = String(data: data, encoding: .utf8), text.contains(opening) else { return data }
        var out = ""
        var rest = Substring(text)
        while let start = rest.range(of: opening) {
            out += rest[..<start.lowerBound]
            let digits = rest[start.upperBound...]
            guard let end = digits.firstIndex(of: "\"") else { break }
            out += digits[..<end]
            out += ".0"
            rest = digits[digits.index(after: end)...]
        }
        out += rest
        return Data(out.utf8)
    }
}
