import NIOCore

/// Reads AMQP's primitive types from one frame's payload; every failure names `context.field`.
struct WireReader {
    package var buffer: ByteBuffer
    /// What is being read, e.g. `queue.declare-ok` (prefix of the field names in errors).
    package let context: String
    /// Bits are packed into octets: the octet being consumed and how many of its bits are used.
    private var bitOctet: UInt8 = 0
    private var bitsUsed = 8

    /// The deepest nesting of tables/arrays accepted (a hostile peer must not exhaust the stack).
    static let maximumNesting = 16

    package init(_ buffer: ByteBuffer, context: String) {
        self.buffer = buffer
        self.context = context
    }

    /// `context.field`, unless `field` is already qualified (tables pass their full path down).
    private func name(_ field: String) -> String { field.hasPrefix(context) ? field : "\(context).\(field)" }

    private mutating func integer<T: FixedWidthInteger>(_ field: String, as: T.Type = T.self) throws(AMQPFrameError) -> T {
        bitsUsed = 8
        guard let value = buffer.readInteger(as: T.self) else {
            throw .truncated(field: name(field), needed: MemoryLayout<T>.size, available: buffer.readableBytes)
        }
        return value
    }

    package mutating func octet(_ field: String) throws(AMQPFrameError) -> UInt8 { try integer(field) }
    package mutating func short(_ field: String) throws(AMQPFrameError) -> UInt16 { try integer(field) }
    package mutating func long(_ field: String) throws(AMQPFrameError) -> UInt32 { try integer(field) }
    mutating func longlong(_ field: String) throws(AMQPFrameError) -> UInt64 { try integer(field) }

    /// One bit; consecutive bits share octets (least significant first).
    package mutating func bit(_ field: String) throws(AMQPFrameError) -> Bool {
        if bitsUsed == 8 {
            guard let octet = buffer.readInteger(as: UInt8.self) else {
                throw .truncated(field: name(field), needed: 1, available: 0)
            }
            bitOctet = octet
            bitsUsed = 0
        }
        let value = bitOctet & (1 << bitsUsed) != 0
        bitsUsed += 1
        return value
    }

    package mutating func bytes(_ field: String, count: Int) throws(AMQPFrameError) -> ByteBuffer {
        bitsUsed = 8
        guard let slice = buffer.readSlice(length: count) else {
            throw .truncated(field: name(field), needed: count, available: buffer.readableBytes)
        }
        return slice
    }

    mutating func shortString(_ field: String) throws(AMQPFrameError) -> String {
        let length = Int(try octet(field))
        let slice = try bytes(field, count: length)
        return String(buffer: slice)
    }

    package mutating func longString(_ field: String) throws(AMQPFrameError) -> String {
        String(buffer: try longBytes(field))
    }

    mutating func longBytes(_ field: String) throws(AMQPFrameError) -> ByteBuffer {
        let length = try long(field)
        guard Int(length) <= buffer.readableBytes else {
            throw .lengthExceedsPayload(field: name(field), declared: length, available: buffer.readableBytes)
        }
        return try bytes(field, count: Int(length))
    }

    package mutating func table(_ field: String) throws(AMQPFrameError) -> AMQPFieldTable {
        try FieldTableCoding.readTable(from: &self, field: name(field), depth: 0)
    }
}

/// Writes AMQP's primitive types (the encoding side of `WireReader`).
struct WireWriter {
    package var buffer: ByteBuffer
    private var bitOctet: UInt8 = 0
    private var bitsPending = 0

    package init(buffer: ByteBuffer) { self.buffer = buffer }

    mutating func flushBits() {
        guard bitsPending > 0 else { return }
        buffer.writeInteger(bitOctet)
        bitOctet = 0
        bitsPending = 0
    }

    private mutating func integer<T: FixedWidthInteger>(_ value: T) {
        flushBits()
        buffer.writeInteger(value)
    }

    package mutating func octet(_ value: UInt8) { integer(value) }
    package mutating func short(_ value: UInt16) { integer(value) }
    package mutating func long(_ value: UInt32) { integer(value) }
    mutating func longlong(_ value: UInt64) { integer(value) }

    package mutating func bit(_ value: Bool) {
        if bitsPending == 8 { flushBits() }
        if value { bitOctet |= 1 << bitsPending }
        bitsPending += 1
    }

    mutating func shortString(_ value: String, field: String) throws(AMQPFrameError) {
        flushBits()
        let utf8 = value.utf8
        guard utf8.count <= 255 else { throw .shortStringTooLong(field: field, length: utf8.count) }
        buffer.writeInteger(UInt8(utf8.count))
        buffer.writeBytes(utf8)
    }

    package mutating func longString(_ value: String) {
        flushBits()
        buffer.writeInteger(UInt32(value.utf8.count))
        buffer.writeBytes(value.utf8)
    }

    mutating func longBytes(_ value: ByteBuffer) {
        flushBits()
        buffer.writeInteger(UInt32(value.readableBytes))
        buffer.writeImmutableBuffer(value)
    }

    package mutating func table(_ value: AMQPFieldTable, field: String) throws(AMQPFrameError) {
        flushBits()
        try FieldTableCoding.writeTable(value, to: &self, field: field)
    }
}
