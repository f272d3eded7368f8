/// Where and how to connect: from an `amqp://user:pass@host:port/vhost` URL or field by field.
///
/// The password never appears in `description` or in any error.
public struct AMQPConfiguration: Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var user: String
    public var password: String
    public var virtualHost: String
    /// Requested heartbeat interval in seconds (0 disables heartbeats).
    public var heartbeatSeconds: UInt16
    /// Largest frame the client accepts and sends (the broker's proposal is lowered to this; at
    /// least 4096, AMQP's minimum, also when set to 0).
    public var frameMax: UInt32
    /// Most channels the client opens (the broker's proposal is lowered to this).
    public var channelMax: UInt16
    /// Largest message body accepted from the broker; a larger one closes the connection.
    public var maximumBodySize: UInt64
    /// TCP connect plus the handshake.
    public var connectTimeout: Duration
    /// Shown in the broker's management (`connection_name` client property).
    public var connectionName: String?

    public init(
        host: String = "localhost", port: Int = 5672, user: String = "guest", password: String = "guest",
        virtualHost: String = "/", heartbeatSeconds: UInt16 = 30, frameMax: UInt32 = 131_072,
        channelMax: UInt16 = 2047, maximumBodySize: UInt64 = 64 * 1024 * 1024,
        connectTimeout: Duration = .seconds(10), connectionName: String? = nil
    ) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.virtualHost = virtualHost
        self.heartbeatSeconds = heartbeatSeconds
        self.frameMax = max(frameMax, AMQPFrame.minimumFrameMax)
        self.channelMax = channelMax
        self.maximumBodySize = maximumBodySize
        self.connectTimeout = connectTimeout
        self.connectionName = connectionName
    }

    /// Parses `amqp://user:pass@host:port/vhost` (percent-decoded; `%2F` is the vhost `/`; an empty
    /// path is `/`). Query parameters `heartbeat`, `frame_max` and `channel_max` are honoured.
    public init(url: String) throws(AMQPURLError) {
        self.init()
        guard url.hasPrefix("amqp://") else { throw AMQPURLError(url: url, reason: "the scheme must be amqp://") }
        var rest = Substring(url.dropFirst("amqp://".count))
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var path: Substring? = nil
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let parts = credentials.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            user = try Self.decode(parts[0], url: url, what: "the user")
            password = parts.count > 1 ? try Self.decode(parts[1], url: url, what: "the password") : ""
        }
        var hostPart = rest
        if hostPart.hasPrefix("["), let close = hostPart.firstIndex(of: "]") {
            host = String(hostPart[hostPart.index(after: hostPart.startIndex)..<close])
            hostPart = hostPart[hostPart.index(after: close)...]
            if hostPart.hasPrefix(":") { try setPort(hostPart.dropFirst(), url: url) }
        } else if let colon = hostPart.lastIndex(of: ":") {
            host = String(hostPart[..<colon])
            try setPort(hostPart[hostPart.index(after: colon)...], url: url)
        } else {
            host = String(hostPart)
        }
        if host.isEmpty { host = "localhost" }
        if let path, !path.isEmpty { virtualHost = try Self.decode(path, url: url, what: "the virtual host") }
        for pair in query.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1)
            guard kv.count == 2 else { continue }
            switch kv[0] {
            case "heartbeat":
                guard let v = UInt16(kv[1]) else { throw AMQPURLError(url: url, reason: "heartbeat '\(kv[1])' is not 0…65535") }
                heartbeatSeconds = v
            case "frame_max":
                guard let v = UInt32(kv[1]), v >= AMQPFrame.minimumFrameMax else {
                    throw AMQPURLError(url: url, reason: "frame_max '\(kv[1])' is not at least 4096")
                }
                frameMax = v
            case "channel_max":
                guard let v = UInt16(kv[1]) else { throw AMQPURLError(url: url, reason: "channel_max '\(kv[1])' is not 0…65535") }
                channelMax = v
            default: continue
            }
        }
    }

    private mutating func setPort(_ text: Substring, url: String) throws(AMQPURLError) {
        guard let value = Int(text), (1...65535).contains(value) else {
            throw AMQPURLError(url: url, reason: "port '\(text)' is not 1…65535")
        }
        port = value
    }

    private static func decode(_ text: Substring, url: String, what: String) throws(AMQPURLError) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            else { throw AMQPURLError(url: url, reason: "\(what) has an invalid percent escape") }
            bytes.append(value)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `amqp://user:***@host:port/vhost`: the password is never shown.
    public var description: String {
        "amqp://\(user):***@\(host):\(port)/\(virtualHost == "/" ? "%2F" : virtualHost)"
    }
}

/// A malformed AMQP URL. The message names what was wrong, never the URL itself (it holds a password).
public struct AMQPURLError: Error, Sendable, Hashable, CustomStringConvertible {
    public let reason: String

    init(url: String, reason: String) {
        self.reason = reason
    }

    public var description: String { "invalid AMQP URL: \(reason)" }
}
