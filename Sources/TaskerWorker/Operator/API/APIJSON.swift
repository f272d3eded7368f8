import Foundation
import TaskerModel

/// JSON coding of the API bodies: timestamps as chrono writes a `DateTime<Utc>`
/// (`2026-03-21T21:16:08.123456Z`); keys come from each model's `CodingKeys`.
package enum APIJSON {
    /// An encoder for API bodies (a new one per call: `JSONEncoder` is not `Sendable`).
    package static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(ResultTimestamp.string(date))
        }
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }

    /// A decoder for API bodies (tests and clients).
    package static func makeDecoder() -> JSONDecoder {
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

    /// `value` as JSON bytes.
    package static func encode(_ value: some Encodable) throws -> Data {
        try makeEncoder().encode(value)
    }
}
