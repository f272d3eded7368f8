import Foundation
import TaskerStepModel
import TaskerText

/// Who this worker process is, in the two spellings upstream uses.
public struct WorkerIdentity: Sendable, Equatable {
    /// The UUID (a v7) behind both spellings; written as `worker_uuid` in transition metadata.
    public let uuid: UUID
    /// The host name, reported in `results.metadata.worker_hostname`.
    public let hostname: String

    /// `worker_<uuid>`: the internal id (its suffix must be a UUID; upstream parses it).
    public var workerID: String { "worker_\(uuid.uuidString.lowercased())" }
    /// `worker-<uuid>`: the id in REST and gRPC bodies.
    public var publicID: String { "worker-\(uuid.uuidString.lowercased())" }

    public init(uuid: UUID = UUID.v7(), hostname: String = ProcessInfo.processInfo.hostName) {
        self.uuid = uuid
        self.hostname = hostname
    }
}

extension UUID {
    /// A time-ordered UUID version 7 (RFC 9562): 48-bit Unix milliseconds, then random bits.
    public static func v7(at date: Date = Date()) -> UUID {
        let millis = UInt64(max(0, date.timeIntervalSince1970 * 1000))
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<6 { bytes[index] = UInt8((millis >> (8 * (5 - UInt64(index)))) & 0xff) }
        var generator = SystemRandomNumberGenerator()
        for index in 6..<16 { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
        bytes[6] = (bytes[6] & 0x0f) | 0x70
        bytes[8] = (bytes[8] & 0x3f) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}

/// RFC 3339 timestamps as chrono writes them (`2026-03-21T21:16:08.123456+00:00`).
public enum RFC3339 {
    public static func string(_ date: Date) -> String {
        let text = PostgresTimestamp.format(date)  // 2026-03-21 21:16:08.123456+00
        return text.replacingOccurrences(of: " ", with: "T") + ":00"
    }
}
