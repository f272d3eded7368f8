/// The `basic` class's message properties (the content header), all optional.
public struct AMQPProperties: Sendable, Hashable {
    public var contentType: String?
    public var contentEncoding: String?
    public var headers: AMQPFieldTable?
    /// 1 = transient, 2 = persistent.
    public var deliveryMode: UInt8?
    public var priority: UInt8?
    public var correlationID: String?
    public var replyTo: String?
    public var expiration: String?
    public var messageID: String?
    /// Seconds since the epoch.
    public var timestamp: UInt64?
    public var type: String?
    public var userID: String?
    public var appID: String?
    public var clusterID: String?

    public init(
        contentType: String? = nil, contentEncoding: String? = nil, headers: AMQPFieldTable? = nil,
        deliveryMode: UInt8? = nil, priority: UInt8? = nil, correlationID: String? = nil, replyTo: String? = nil,
        expiration: String? = nil, messageID: String? = nil, timestamp: UInt64? = nil, type: String? = nil,
        userID: String? = nil, appID: String? = nil, clusterID: String? = nil
    ) {
        self.contentType = contentType
        self.contentEncoding = contentEncoding
        self.headers = headers
        self.deliveryMode = deliveryMode
        self.priority = priority
        self.correlationID = correlationID
        self.replyTo = replyTo
        self.expiration = expiration
        self.messageID = messageID
        self.timestamp = timestamp
        self.type = type
        self.userID = userID
        self.appID = appID
        self.clusterID = clusterID
    }

    /// Persistent JSON, as Tasker publishes (`delivery_mode = 2`, `content_type = application/json`).
    public static let persistentJSON = AMQPProperties(contentType: "application/json", deliveryMode: 2)
}
