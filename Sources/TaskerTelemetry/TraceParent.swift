/// A W3C Trace Context `traceparent` value (`00-<trace id>-<parent id>-<flags>`,
/// https://www.w3.org/TR/trace-context/#traceparent-header): how a trace crosses a process boundary
/// here, in HTTP headers, in step messages (an added `traceparent` key) and in the FFI step event.
///
/// Parsing is strict and bounded, because the value comes from anyone who can send a message or a
/// request: lowercase hex only, version `ff` refused, all-zero trace and span ids refused, version
/// `00` exactly 55 characters; a later version may carry more fields after a `-` (the spec's forward
/// compatibility), up to ``maximumLength``. Anything else is not a trace parent (nil), never an error
/// that stops the step: the step then starts a trace of its own.
public struct TraceParent: Sendable, Hashable, CustomStringConvertible {
    /// The longest value read (a later version's extra fields included).
    public static let maximumLength = 512

    public var traceID: TraceID
    /// The span of the sender: the parent of spans started from this value.
    public var spanID: SpanID
    /// The sender's sampling decision (flag `01`).
    public var sampled: Bool

    public init(traceID: TraceID, spanID: SpanID, sampled: Bool) {
        self.traceID = traceID
        self.spanID = spanID
        self.sampled = sampled
    }

    /// The value of `header`, or nil when it is not a valid `traceparent`.
    public init?(header: some StringProtocol) {
        let utf8 = Array(header.utf8.prefix(Self.maximumLength + 1))
        guard utf8.count >= 55, utf8.count <= Self.maximumLength else { return nil }
        guard let version = Hex.value(utf8[0..<2]), version != 0xff else { return nil }
        guard version != 0 || utf8.count == 55 else { return nil }
        guard utf8.count == 55 || utf8[55] == UInt8(ascii: "-") else { return nil }
        guard utf8[2] == UInt8(ascii: "-"), utf8[35] == UInt8(ascii: "-"), utf8[52] == UInt8(ascii: "-") else { return nil }
        guard let high = Hex.value(utf8[3..<19]), let low = Hex.value(utf8[19..<35]), high | low != 0 else { return nil }
        guard let span = Hex.value(utf8[36..<52]), span != 0 else { return nil }
        guard let flags = Hex.value(utf8[53..<55]) else { return nil }
        self.init(traceID: TraceID(high: high, low: low), spanID: SpanID(span), sampled: flags & 1 == 1)
    }

    /// `00-<trace id>-<span id>-<01|00>`.
    public var header: String {
        "00-\(traceID.hex)-\(spanID.hex)-\(sampled ? "01" : "00")"
    }

    public var description: String { header }
}

/// A 16-byte trace id.
public struct TraceID: Sendable, Hashable, CustomStringConvertible {
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A random, non-zero id.
    public static func random() -> TraceID {
        var generator = SystemRandomNumberGenerator()
        while true {
            let id = TraceID(high: generator.next(), low: generator.next())
            if id.high | id.low != 0 { return id }
        }
    }

    /// 32 lowercase hex digits.
    public var hex: String { Hex.string(high) + Hex.string(low) }
    public var description: String { hex }
}

/// An 8-byte span id.
public struct SpanID: Sendable, Hashable, CustomStringConvertible {
    public let value: UInt64

    public init(_ value: UInt64) {
        self.value = value
    }

    /// A random, non-zero id.
    public static func random() -> SpanID {
        var generator = SystemRandomNumberGenerator()
        while true {
            let value: UInt64 = generator.next()
            if value != 0 { return SpanID(value) }
        }
    }

    /// 16 lowercase hex digits.
    public var hex: String { Hex.string(value) }
    public var description: String { hex }
}

/// Lowercase hex, as Trace Context requires.
enum Hex {
    /// The value of 1–16 lowercase hex digits; nil for anything else (uppercase included).
    static func value(_ digits: ArraySlice<UInt8>) -> UInt64? {
        guard !digits.isEmpty, digits.count <= 16 else { return nil }
        var value: UInt64 = 0
        for byte in digits {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt64(digit)
        }
        return value
    }

    /// 16 lowercase hex digits.
    static func string(_ value: UInt64) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<16 {
            bytes[index] = digits[Int(value >> UInt64(60 - 4 * index) & 0xf)]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
