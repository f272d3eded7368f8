import NIOCore

/// Collects a content-carrying method, its header and its body frames into one message, per channel.
/// Pure: no I/O. A body larger than `maximumBodySize` is discarded as its frames arrive, never
/// buffered: the message comes out with an empty body and `discardedBodySize` set, so that its
/// receiver can settle it (a delivery that ended the connection instead would be redelivered to it
/// forever). A body is held in memory only as far as its frames arrived (the size its header
/// announces is never reserved up front: a peer could announce the limit and send one byte).
struct ContentAssembler {
    package struct Message: Sendable, Hashable {
        package var method: AMQPMethod
        package var properties: AMQPProperties
        package var body: ByteBuffer
        /// The size the header announced when the body was over `maximumBodySize` and dropped unread.
        package var discardedBodySize: UInt64? = nil
    }

    private enum State {
        case idle
        case awaitingHeader(AMQPMethod)
        case awaitingBody(AMQPMethod, AMQPProperties, expected: Int, body: ByteBuffer)
        /// An oversize body: its frames are counted and dropped.
        case discarding(AMQPMethod, AMQPProperties, announced: UInt64, remaining: UInt64)
    }

    package let channel: UInt16
    package let maximumBodySize: UInt64
    private var state = State.idle

    package init(channel: UInt16, maximumBodySize: UInt64) {
        self.channel = channel
        self.maximumBodySize = maximumBodySize
    }

    /// Bytes of memory held for the body being assembled.
    var bodyCapacity: Int {
        if case .awaitingBody(_, _, _, let body) = state { return body.capacity }
        return 0
    }

    package mutating func start(_ method: AMQPMethod) throws(AMQPFrameError) {
        guard case .idle = state else {
            throw .unexpectedFrame("\(method.name) on channel \(channel) while a message's content was incomplete")
        }
        state = .awaitingHeader(method)
    }

    /// The message, when the header announces an empty body.
    package mutating func header(_ header: ContentHeader) throws(AMQPFrameError) -> Message? {
        guard case .awaitingHeader(let method) = state else {
            throw .unexpectedFrame("content header on channel \(channel) without a method that carries content")
        }
        guard header.bodySize <= maximumBodySize else {
            state = .discarding(method, header.properties, announced: header.bodySize, remaining: header.bodySize)
            return nil
        }
        if header.bodySize == 0 {
            state = .idle
            return Message(method: method, properties: header.properties, body: ByteBuffer())
        }
        state = .awaitingBody(method, header.properties, expected: Int(header.bodySize), body: ByteBuffer())
        return nil
    }

    /// The message, when this body frame completes it.
    package mutating func body(_ part: ByteBuffer) throws(AMQPFrameError) -> Message? {
        if case .discarding(let method, let properties, let announced, let remaining) = state {
            guard UInt64(part.readableBytes) <= remaining else {
                throw .unexpectedFrame(
                    "body frames on channel \(channel) exceed the \(announced) bytes the content header announced")
            }
            guard UInt64(part.readableBytes) == remaining else {
                state = .discarding(method, properties, announced: announced, remaining: remaining - UInt64(part.readableBytes))
                return nil
            }
            state = .idle
            return Message(method: method, properties: properties, body: ByteBuffer(), discardedBodySize: announced)
        }
        guard case .awaitingBody(let method, let properties, let expected, var body) = state else {
            throw .unexpectedFrame("body frame on channel \(channel) without a content header")
        }
        guard body.readableBytes + part.readableBytes <= expected else {
            throw .unexpectedFrame(
                "body frames on channel \(channel) exceed the \(expected) bytes the content header announced")
        }
        state = .idle
        if body.readableBytes == 0 && part.readableBytes == expected {
            return Message(method: method, properties: properties, body: part)
        }
        body.writeImmutableBuffer(part)
        if body.readableBytes == expected {
            return Message(method: method, properties: properties, body: body)
        }
        state = .awaitingBody(method, properties, expected: expected, body: body)
        return nil
    }
}
