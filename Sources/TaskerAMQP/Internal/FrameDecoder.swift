import NIOCore

/// Splits received bytes into frames, however they were fragmented. Pure: no I/O.
///
/// A frame whose header announces more than `maximumFrameSize` bytes is refused as soon as its
/// 7-byte header is readable, before its payload is buffered.
package struct FrameDecoder {
    /// The negotiated frame_max (whole frame, header and end octet included).
    var maximumFrameSize: UInt32
    private var buffer = ByteBuffer()
    private var checkedProtocolHeader = false

    package init(maximumFrameSize: UInt32) {
        self.maximumFrameSize = maximumFrameSize
    }

    /// Bytes received and not yet part of a decoded frame.
    var bufferedBytes: Int { buffer.readableBytes }

    package mutating func append(_ bytes: ByteBuffer) {
        if buffer.readableBytes == 0 {
            buffer = bytes
        } else {
            if buffer.readerIndex > 65_536 { buffer.discardReadBytes() }
            buffer.writeImmutableBuffer(bytes)
        }
    }

    /// The next complete frame, or nil when more bytes are needed.
    package mutating func next() throws(AMQPFrameError) -> AMQPFrame? {
        if !checkedProtocolHeader {
            // A server that refuses our protocol version answers with its own header and closes.
            guard buffer.readableBytes >= 1 else { return nil }
            if buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) == UInt8(ascii: "A") {
                guard buffer.readableBytes >= 8 else { return nil }
                throw .protocolVersionMismatch(serverHeader: buffer.getBytes(at: buffer.readerIndex, length: 8) ?? [])
            }
            checkedProtocolHeader = true
        }
        guard buffer.readableBytes >= 7,
            let type = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
            let channel = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt16.self),
            let size = buffer.getInteger(at: buffer.readerIndex + 3, as: UInt32.self)
        else { return nil }
        guard [AMQPFrame.typeMethod, AMQPFrame.typeHeader, AMQPFrame.typeBody, AMQPFrame.typeHeartbeat].contains(type) else {
            throw .unknownFrameType(type, channel: channel)
        }
        let limit = maximumFrameSize == 0 ? UInt32.max : maximumFrameSize
        guard UInt64(size) + UInt64(AMQPFrame.overhead) <= UInt64(limit) else {
            throw .frameTooLarge(size: size, limit: limit, channel: channel)
        }
        let total = Int(size) + AMQPFrame.overhead
        guard buffer.readableBytes >= total else { return nil }
        let end = buffer.getInteger(at: buffer.readerIndex + total - 1, as: UInt8.self)!
        guard end == AMQPFrame.frameEnd else { throw .badFrameEnd(found: end, frameType: type, channel: channel) }
        buffer.moveReaderIndex(forwardBy: 7)
        let payload = buffer.readSlice(length: Int(size))!
        buffer.moveReaderIndex(forwardBy: 1)
        switch type {
        case AMQPFrame.typeMethod: return .method(channel: channel, try AMQPMethod.decode(payload))
        case AMQPFrame.typeHeader: return .header(channel: channel, try ContentHeader.decode(payload))
        case AMQPFrame.typeBody: return .body(channel: channel, payload)
        default: return .heartbeat
        }
    }
}
