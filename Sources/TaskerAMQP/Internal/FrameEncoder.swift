import NIOCore

/// Encodes frames; a message is split into method, header and body frames of at most frame_max bytes.
enum FrameEncoder {
    package static func encode(_ frame: AMQPFrame, into buffer: inout ByteBuffer) throws(AMQPFrameError) {
        switch frame {
        case .method(let channel, let method):
            try framed(AMQPFrame.typeMethod, channel: channel, into: &buffer) { (payload: inout ByteBuffer) throws(AMQPFrameError) in
                try method.encode(into: &payload)
            }
        case .header(let channel, let header):
            try framed(AMQPFrame.typeHeader, channel: channel, into: &buffer) { (payload: inout ByteBuffer) throws(AMQPFrameError) in
                try header.encode(into: &payload)
            }
        case .body(let channel, let body):
            try framed(AMQPFrame.typeBody, channel: channel, into: &buffer) { $0.writeImmutableBuffer(body) }
        case .heartbeat:
            try framed(AMQPFrame.typeHeartbeat, channel: 0, into: &buffer) { _ in }
        }
    }

    private static func framed(
        _ type: UInt8, channel: UInt16, into buffer: inout ByteBuffer,
        _ payload: (inout ByteBuffer) throws(AMQPFrameError) -> Void
    ) throws(AMQPFrameError) {
        buffer.writeInteger(type)
        buffer.writeInteger(channel)
        let sizeIndex = buffer.writerIndex
        buffer.writeInteger(UInt32(0))
        try payload(&buffer)
        buffer.setInteger(UInt32(buffer.writerIndex - sizeIndex - 4), at: sizeIndex)
        buffer.writeInteger(AMQPFrame.frameEnd)
    }

    /// A content-carrying method (`basic.publish`), its header and the body in frames of at most
    /// `frameMax` bytes (0 = no limit), all in one buffer so that they are written without interleaving.
    static func encodeContent(
        channel: UInt16, method: AMQPMethod, properties: AMQPProperties, body: ByteBuffer, frameMax: UInt32,
        into buffer: inout ByteBuffer
    ) throws(AMQPFrameError) {
        try encode(.method(channel: channel, method), into: &buffer)
        try encode(.header(channel: channel, ContentHeader(bodySize: UInt64(body.readableBytes), properties: properties)), into: &buffer)
        let chunk = frameMax == 0 ? Int.max : Int(frameMax) - AMQPFrame.overhead
        var rest = body
        while rest.readableBytes > 0 {
            let slice = rest.readSlice(length: min(chunk, rest.readableBytes))!
            try encode(.body(channel: channel, slice), into: &buffer)
        }
    }
}
