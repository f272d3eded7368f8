/// What was wrong with bytes received from (or about to be sent to) the peer: the frame codec's errors.
///
/// Each case names the frame, method or field where the problem was found, so that a hostile or
/// broken peer yields a diagnosable error, never a crash or an unbounded allocation.
public enum AMQPFrameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The octet after a frame's payload was not `0xCE`.
    case badFrameEnd(found: UInt8, frameType: UInt8, channel: UInt16)
    /// A frame type other than method (1), header (2), body (3) or heartbeat (8).
    case unknownFrameType(UInt8, channel: UInt16)
    /// A frame announced a payload larger than the negotiated `frame_max`; refused before buffering it.
    case frameTooLarge(size: UInt32, limit: UInt32, channel: UInt16)
    /// A payload ended before the field `field` (e.g. `queue.declare-ok.message-count`) was complete.
    case truncated(field: String, needed: Int, available: Int)
    /// A method frame with a class/method id pair this client does not know.
    case unknownMethod(classID: UInt16, methodID: UInt16)
    /// A field table or array value of an unknown type octet.
    case unknownFieldType(UInt8, field: String)
    /// A table or array announced more bytes than its payload holds.
    case lengthExceedsPayload(field: String, declared: UInt32, available: Int)
    /// Tables/arrays nested deeper than the codec allows.
    case nestingTooDeep(field: String, limit: Int)
    /// A content header of a class other than `basic`, or with property flags this client cannot read.
    case malformedContentHeader(String)
    /// A short string (at most 255 bytes) that is too long to encode.
    case shortStringTooLong(field: String, length: Int)
    /// The server answered the protocol header with its own (it does not speak AMQP 0-9-1).
    case protocolVersionMismatch(serverHeader: [UInt8])
    /// A frame arrived where the protocol does not allow it (e.g. a body frame without a header).
    case unexpectedFrame(String)

    public var description: String {
        switch self {
        case .badFrameEnd(let found, let type, let channel):
            return "AMQP frame of type \(type) on channel \(channel) ends with 0x\(String(found, radix: 16)) instead of 0xce"
        case .unknownFrameType(let type, let channel):
            return "unknown AMQP frame type \(type) on channel \(channel)"
        case .frameTooLarge(let size, let limit, let channel):
            return "AMQP frame of \(size) bytes on channel \(channel) exceeds frame_max \(limit)"
        case .truncated(let field, let needed, let available):
            return "AMQP payload truncated at \(field): needs \(needed) bytes, \(available) left"
        case .unknownMethod(let classID, let methodID):
            return "unknown AMQP method \(classID).\(methodID)"
        case .unknownFieldType(let type, let field):
            return "unknown AMQP field type 0x\(String(type, radix: 16)) in \(field)"
        case .lengthExceedsPayload(let field, let declared, let available):
            return "AMQP \(field) declares \(declared) bytes but only \(available) are left"
        case .nestingTooDeep(let field, let limit):
            return "AMQP \(field) nests tables/arrays deeper than \(limit)"
        case .malformedContentHeader(let what):
            return "malformed AMQP content header: \(what)"
        case .shortStringTooLong(let field, let length):
            return "AMQP short string \(field) is \(length) bytes (at most 255)"
        case .protocolVersionMismatch(let header):
            return "the server does not speak AMQP 0-9-1 (it answered \(header))"
        case .unexpectedFrame(let what):
            return "unexpected AMQP frame: \(what)"
        }
    }
}
