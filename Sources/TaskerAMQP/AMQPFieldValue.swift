/// A value in an AMQP field table or field array, with every type RabbitMQ sends.
///
/// RabbitMQ's dialect (its "errata" of 0-9-1) is used: `s` is a signed 16-bit and `l` a signed 64-bit
/// integer. Tables compare by content; the order of their keys is not significant on the wire.
public indirect enum AMQPFieldValue: Sendable, Hashable {
    case bool(Bool)
    case int8(Int8)
    case uint8(UInt8)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case float(Float)
    case double(Double)
    /// `value / 10^scale`.
    case decimal(scale: UInt8, value: UInt32)
    /// A long string (`S`); bytes that are not UTF-8 are replaced when decoding.
    case longString(String)
    /// A byte array (`x`).
    case bytes([UInt8])
    /// Seconds since the epoch (`T`).
    case timestamp(UInt64)
    case table(AMQPFieldTable)
    case array([AMQPFieldValue])
    case void
}

/// An AMQP field table (queue arguments, message headers, server properties).
public typealias AMQPFieldTable = [String: AMQPFieldValue]
