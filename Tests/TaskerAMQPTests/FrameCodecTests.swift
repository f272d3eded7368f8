import NIOCore
import Testing

@testable import TaskerAMQP

/// The frame codec without I/O: encodings round-trip, any fragmentation decodes to the same frames,
/// and malformed or oversize input gives a typed error naming what was wrong.
@Suite("AMQP frame codec")
struct FrameCodecTests {
    static let everyFieldType: AMQPFieldTable = [
        "bool": .bool(true), "i8": .int8(-8), "u8": .uint8(200), "i16": .int16(-300), "u16": .uint16(60000),
        "i32": .int32(-70000), "u32": .uint32(4_000_000_000), "i64": .int64(-5_000_000_000), "float": .float(1.5),
        "double": .double(-2.25), "decimal": .decimal(scale: 2, value: 12345), "long string": .longString("héllo"),
        "bytes": .bytes([0, 1, 255]), "timestamp": .timestamp(1_764_000_000), "void": .void,
        "nested": .table(["inner": .array([.int32(1), .longString("two"), .table(["deep": .bool(false)])])]),
    ]

    static func encode(_ frames: [AMQPFrame]) throws -> ByteBuffer {
        var buffer = ByteBuffer()
        for frame in frames { try FrameEncoder.encode(frame, into: &buffer) }
        return buffer
    }

    static func decodeAll(_ buffer: ByteBuffer, frameMax: UInt32 = 131_072, chunk: Int = .max) throws -> [AMQPFrame] {
        var decoder = FrameDecoder(maximumFrameSize: frameMax)
        var rest = buffer
        var frames: [AMQPFrame] = []
        while rest.readableBytes > 0 {
            decoder.append(rest.readSlice(length: min(chunk, rest.readableBytes))!)
            while let frame = try decoder.next() { frames.append(frame) }
        }
        #expect(decoder.bufferedBytes == 0)
        return frames
    }

    static let methods: [AMQPMethod] = [
        .connectionStart(
            versionMajor: 0, versionMinor: 9, serverProperties: everyFieldType, mechanisms: "PLAIN AMQPLAIN", locales: "en_US"),
        .connectionStartOk(clientProperties: ["product": .longString("x")], mechanism: "PLAIN", response: "\0u\0p", locale: "en_US"),
        .connectionTune(channelMax: 2047, frameMax: 131_072, heartbeat: 60),
        .connectionOpen(virtualHost: "/"), .connectionOpenOk,
        .connectionClose(
            AMQPCloseReason(replyCode: 320, replyText: "CONNECTION_FORCED - closed via management plugin", classID: 0, methodID: 0)),
        .channelClose(AMQPCloseReason(replyCode: 406, replyText: "PRECONDITION_FAILED", classID: 50, methodID: 10)),
        .exchangeDeclare(.init(exchange: "q_dlx", type: "direct", durable: true)),
        .queueDeclare(
            .init(
                queue: "q", passive: false, durable: true, exclusive: false, autoDelete: true,
                arguments: ["x-dead-letter-exchange": .longString("q_dlx")])),
        .queueDeclareOk(queue: "q", messageCount: 7, consumerCount: 2),
        .queueBind(queue: "q_dlq", exchange: "q_dlx", routingKey: "q", arguments: [:]),
        .basicQos(prefetchSize: 0, prefetchCount: 10, global: false),
        .basicConsume(queue: "q", consumerTag: "tag", noAck: false, exclusive: true, arguments: [:]),
        .basicDeliver(consumerTag: "tag", deliveryTag: 1 << 40, redelivered: true, exchange: "", routingKey: "q"),
        .basicGetOk(deliveryTag: 3, redelivered: false, exchange: "", routingKey: "q", messageCount: 9),
        .basicNack(deliveryTag: 5, multiple: true, requeue: true), .basicAck(deliveryTag: 6, multiple: false),
        .basicCancel(consumerTag: "tag", noWait: true), .confirmSelect, .confirmSelectOk, .basicGetEmpty,
    ]

    @Test func methodsAndContentRoundTripWholeAndByteByByte() throws {
        let properties = AMQPProperties(
            contentType: "application/json", contentEncoding: "utf-8", headers: Self.everyFieldType, deliveryMode: 2,
            priority: 3, correlationID: "c", replyTo: "r", expiration: "60000", messageID: "m-1", timestamp: 1_764_000_000,
            type: "t", userID: "guest", appID: "tasker", clusterID: "")
        var frames = Self.methods.map { AMQPFrame.method(channel: 3, $0) }
        frames += [
            .header(channel: 3, ContentHeader(bodySize: 5, properties: properties)), .body(channel: 3, ByteBuffer(string: "hello")),
            .heartbeat,
        ]
        let bytes = try Self.encode(frames)
        #expect(try Self.decodeAll(bytes) == frames)
        #expect(try Self.decodeAll(bytes, chunk: 1) == frames)
        #expect(try Self.decodeAll(bytes, chunk: 7) == frames)
    }

    @Test func aBodyIsSplitAtFrameMaxAndReassembled() throws {
        let body = ByteBuffer(bytes: (0..<10_000).map { UInt8($0 % 251) })
        var buffer = ByteBuffer()
        try FrameEncoder.encodeContent(
            channel: 1, method: .basicPublish(exchange: "", routingKey: "q", mandatory: false), properties: .persistentJSON,
            body: body, frameMax: 4096, into: &buffer)
        let frames = try Self.decodeAll(buffer, frameMax: 4096, chunk: 1000)
        let bodies = frames.compactMap { if case .body(_, let part) = $0 { part } else { nil } }
        #expect(bodies.map(\.readableBytes) == [4088, 4088, 1824])
        var assembler = ContentAssembler(channel: 1, maximumBodySize: 10_000)
        guard case .method(_, let method) = frames[0], case .header(_, let header) = frames[1] else {
            Issue.record("expected method and header first: \(frames.prefix(2))")
            return
        }
        try assembler.start(method)
        #expect(try assembler.header(header) == nil)
        #expect(header.properties == .persistentJSON)
        #expect(try assembler.body(bodies[0]) == nil)
        #expect(try assembler.body(bodies[1]) == nil)
        #expect(try assembler.body(bodies[2])?.body == body)
    }

    static func rawFrame(type: UInt8, channel: UInt16 = 0, payload: [UInt8], end: UInt8 = 0xCE, sizeOverride: UInt32? = nil) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(type)
        buffer.writeInteger(channel)
        buffer.writeInteger(sizeOverride ?? UInt32(payload.count))
        buffer.writeBytes(payload)
        buffer.writeInteger(end)
        return buffer
    }

    static func decodeError(_ buffer: ByteBuffer, frameMax: UInt32 = 131_072) -> AMQPFrameError? {
        var decoder = FrameDecoder(maximumFrameSize: frameMax)
        decoder.append(buffer)
        do {
            while try decoder.next() != nil {}
            return nil
        } catch {
            return error
        }
    }

    @Test func malformedFramesGiveTypedErrorsNamingTheProblem() throws {
        // queue.declare-ok (50.11) whose payload stops inside message-count.
        let truncated: [UInt8] = [0, 50, 0, 11, 1, UInt8(ascii: "q"), 0, 0]
        #expect(
            Self.decodeError(Self.rawFrame(type: 1, payload: truncated))
                == .truncated(field: "queue.declare-ok.message-count", needed: 4, available: 2))
        #expect(Self.decodeError(Self.rawFrame(type: 8, payload: [], end: 0xCD)) == .badFrameEnd(found: 0xCD, frameType: 8, channel: 0))
        #expect(Self.decodeError(Self.rawFrame(type: 9, channel: 4, payload: [])) == .unknownFrameType(9, channel: 4))
        #expect(Self.decodeError(Self.rawFrame(type: 1, payload: [0, 99, 0, 1])) == .unknownMethod(classID: 99, methodID: 1))
        // connection.start whose server-properties table claims 1000 bytes but holds 3.
        let lyingTable: [UInt8] = [0, 10, 0, 10, 0, 9, 0, 0, 3, 232, 1, 2, 3]
        let error = Self.decodeError(Self.rawFrame(type: 1, payload: lyingTable))
        #expect(error == .lengthExceedsPayload(field: "connection.start.server-properties", declared: 1000, available: 3))
        #expect(error?.description.contains("server-properties") == true)
        // A field of an unknown type octet.
        let unknownType: [UInt8] = [0, 10, 0, 10, 0, 9, 0, 0, 0, 3, 1, UInt8(ascii: "k"), UInt8(ascii: "Z")]
        #expect(
            Self.decodeError(Self.rawFrame(type: 1, payload: unknownType))
                == .unknownFieldType(UInt8(ascii: "Z"), field: "connection.start.server-properties.k"))
        // A broker that does not accept our version answers with the header of the one it speaks.
        let refused = Array("AMQP".utf8) + [1, 1, 0, 10]
        #expect(Self.decodeError(ByteBuffer(bytes: refused)) == .protocolVersionMismatch(serverHeader: refused))
    }

    @Test func tablesNestedTooDeeplyAreRefused() throws {
        var value = AMQPFieldValue.void
        for _ in 0..<40 { value = .table(["t": value]) }
        var buffer = ByteBuffer()
        try FrameEncoder.encode(
            .method(channel: 0, .connectionStartOk(clientProperties: ["x": value], mechanism: "PLAIN", response: "", locale: "")),
            into: &buffer)
        guard case .nestingTooDeep(let field, let limit)? = Self.decodeError(buffer) else {
            Issue.record("a 40-deep table decoded")
            return
        }
        #expect(limit == WireReader.maximumNesting && field.hasPrefix("connection.start-ok.client-properties.x"))
    }

    @Test func anOversizeFrameIsRefusedFromItsHeaderBeforeItsPayloadArrives() {
        // Only the 7-byte header of a frame announcing 1 GiB: refused without waiting for (or buffering) it.
        var header = ByteBuffer()
        header.writeInteger(UInt8(3))
        header.writeInteger(UInt16(1))
        header.writeInteger(UInt32(1 << 30))
        #expect(Self.decodeError(header, frameMax: 131_072) == .frameTooLarge(size: 1 << 30, limit: 131_072, channel: 1))
        // frame_max counts the 8 bytes of header and end octet: a 4089-byte payload exceeds 4096.
        #expect(
            Self.decodeError(Self.rawFrame(type: 3, channel: 1, payload: [UInt8](repeating: 0, count: 4089)), frameMax: 4096)
                == .frameTooLarge(size: 4089, limit: 4096, channel: 1))
        #expect(Self.decodeError(Self.rawFrame(type: 3, channel: 1, payload: [UInt8](repeating: 0, count: 4088)), frameMax: 4096) == nil)
    }

    /// An oversize body is dropped frame by frame (nothing buffered) and the message comes out empty
    /// with the announced size, so that the receiver can settle it; the next message is read as usual.
    @Test func anOversizeBodyIsDiscardedAsItArrivesAndReportedWithItsSize() throws {
        var assembler = ContentAssembler(channel: 2, maximumBodySize: 1024)
        let deliver = AMQPMethod.basicDeliver(consumerTag: "t", deliveryTag: 1, redelivered: false, exchange: "", routingKey: "q")
        try assembler.start(deliver)
        #expect(try assembler.header(ContentHeader(bodySize: 3000, properties: AMQPProperties())) == nil)
        #expect(try assembler.body(ByteBuffer(repeating: 1, count: 2000)) == nil)
        #expect(assembler.bodyCapacity == 0)
        let message = try #require(try assembler.body(ByteBuffer(repeating: 1, count: 1000)))
        #expect(message.discardedBodySize == 3000 && message.body.readableBytes == 0 && message.method == deliver)
        try assembler.start(deliver)
        #expect(try assembler.header(ContentHeader(bodySize: 2, properties: AMQPProperties())) == nil)
        #expect(try assembler.body(ByteBuffer(string: "ok"))?.body == ByteBuffer(string: "ok"))
        // More body than announced is still a protocol error, oversize or not.
        try assembler.start(deliver)
        #expect(try assembler.header(ContentHeader(bodySize: 2000, properties: AMQPProperties())) == nil)
        #expect(throws: AMQPFrameError.self) { _ = try assembler.body(ByteBuffer(repeating: 1, count: 2001)) }
    }

    @Test func aBodyHoldsOnlyTheMemoryOfTheBytesReceivedNotWhatItsHeaderAnnounces() throws {
        let limit: UInt64 = 64 * 1024 * 1024
        var assembler = ContentAssembler(channel: 2, maximumBodySize: limit)
        try assembler.start(.basicDeliver(consumerTag: "t", deliveryTag: 1, redelivered: false, exchange: "", routingKey: "q"))
        #expect(try assembler.header(ContentHeader(bodySize: limit, properties: AMQPProperties())) == nil)
        #expect(try assembler.body(ByteBuffer(string: "one byte at a time")) == nil)
        #expect(assembler.bodyCapacity > 0 && assembler.bodyCapacity < 64 * 1024)
    }

    @Test func contentFramesOutOfOrderAreRefused() throws {
        var assembler = ContentAssembler(channel: 2, maximumBodySize: 1024)
        #expect(throws: AMQPFrameError.self) { _ = try assembler.body(ByteBuffer(string: "x")) }
        #expect(throws: AMQPFrameError.self) { _ = try assembler.header(ContentHeader(bodySize: 1, properties: AMQPProperties())) }
        try assembler.start(.basicGetOk(deliveryTag: 1, redelivered: false, exchange: "", routingKey: "q", messageCount: 0))
        _ = try assembler.header(ContentHeader(bodySize: 2, properties: AMQPProperties()))
        // More body than the header announced.
        #expect(throws: AMQPFrameError.self) { _ = try assembler.body(ByteBuffer(string: "abc")) }
    }

    @Test func aShortStringOver255BytesIsAnEncodingErrorNamingTheField() {
        var buffer = ByteBuffer()
        #expect(throws: AMQPFrameError.shortStringTooLong(field: "queue.declare.queue", length: 300)) {
            try AMQPMethod.queueDeclare(.init(queue: String(repeating: "q", count: 300))).encode(into: &buffer)
        }
    }
}
