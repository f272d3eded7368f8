import NIOCore

/// One AMQP frame, decoded.
package enum AMQPFrame: Sendable, Hashable {
    case method(channel: UInt16, AMQPMethod)
    case header(channel: UInt16, ContentHeader)
    case body(channel: UInt16, ByteBuffer)
    case heartbeat

    static let typeMethod: UInt8 = 1
    static let typeHeader: UInt8 = 2
    static let typeBody: UInt8 = 3
    static let typeHeartbeat: UInt8 = 8
    static let frameEnd: UInt8 = 0xCE
    /// Header (type, channel, size) and end octet around each payload.
    static let overhead = 8
    /// The smallest frame_max a peer may negotiate (and the limit before tuning).
    static let minimumFrameMax: UInt32 = 4096
    /// What the client sends first: `AMQP` 0 0 9 1.
    static let protocolHeader: [UInt8] = Array("AMQP".utf8) + [0, 0, 9, 1]

    package var channel: UInt16 {
        switch self {
        case .method(let channel, _), .header(let channel, _), .body(let channel, _): channel
        case .heartbeat: 0
        }
    }
}
