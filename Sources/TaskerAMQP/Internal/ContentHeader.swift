import NIOCore

/// A content header frame's payload: class `basic`, the body size that follows, the properties.
package struct ContentHeader: Sendable, Hashable {
    var bodySize: UInt64
    package var properties: AMQPProperties

    static let basicClassID: UInt16 = 60

    package init(bodySize: UInt64, properties: AMQPProperties) {
        self.bodySize = bodySize
        self.properties = properties
    }

    package static func decode(_ payload: ByteBuffer) throws(AMQPFrameError) -> ContentHeader {
        var r = WireReader(payload, context: "content-header")
        let classID = try r.short("class-id")
        guard classID == basicClassID else { throw .malformedContentHeader("class id \(classID) is not basic (60)") }
        _ = try r.short("weight")
        let bodySize = try r.longlong("body-size")
        let flags = try r.short("property-flags")
        guard flags & 1 == 0 else { throw .malformedContentHeader("property flags continue past the 14 basic properties") }
        func has(_ bit: Int) -> Bool { flags & (1 << bit) != 0 }
        var p = AMQPProperties()
        if has(15) { p.contentType = try r.shortString("content-type") }
        if has(14) { p.contentEncoding = try r.shortString("content-encoding") }
        if has(13) { p.headers = try r.table("headers") }
        if has(12) { p.deliveryMode = try r.octet("delivery-mode") }
        if has(11) { p.priority = try r.octet("priority") }
        if has(10) { p.correlationID = try r.shortString("correlation-id") }
        if has(9) { p.replyTo = try r.shortString("reply-to") }
        if has(8) { p.expiration = try r.shortString("expiration") }
        if has(7) { p.messageID = try r.shortString("message-id") }
        if has(6) { p.timestamp = try r.longlong("timestamp") }
        if has(5) { p.type = try r.shortString("type") }
        if has(4) { p.userID = try r.shortString("user-id") }
        if has(3) { p.appID = try r.shortString("app-id") }
        if has(2) { p.clusterID = try r.shortString("cluster-id") }
        return ContentHeader(bodySize: bodySize, properties: p)
    }

    package func encode(into buffer: inout ByteBuffer) throws(AMQPFrameError) {
        let p = properties
        var flags: UInt16 = 0
        func flag(_ present: Bool, _ bit: Int) { if present { flags |= 1 << bit } }
        flag(p.contentType != nil, 15)
        flag(p.contentEncoding != nil, 14)
        flag(p.headers != nil, 13)
        flag(p.deliveryMode != nil, 12)
        flag(p.priority != nil, 11)
        flag(p.correlationID != nil, 10)
        flag(p.replyTo != nil, 9)
        flag(p.expiration != nil, 8)
        flag(p.messageID != nil, 7)
        flag(p.timestamp != nil, 6)
        flag(p.type != nil, 5)
        flag(p.userID != nil, 4)
        flag(p.appID != nil, 3)
        flag(p.clusterID != nil, 2)
        var w = WireWriter(buffer: buffer)
        w.short(Self.basicClassID)
        w.short(0)
        w.longlong(bodySize)
        w.short(flags)
        func string(_ value: String?, _ field: String) throws(AMQPFrameError) {
            if let value { try w.shortString(value, field: "content-header.\(field)") }
        }
        try string(p.contentType, "content-type")
        try string(p.contentEncoding, "content-encoding")
        if let headers = p.headers { try w.table(headers, field: "content-header.headers") }
        if let mode = p.deliveryMode { w.octet(mode) }
        if let priority = p.priority { w.octet(priority) }
        try string(p.correlationID, "correlation-id")
        try string(p.replyTo, "reply-to")
        try string(p.expiration, "expiration")
        try string(p.messageID, "message-id")
        if let timestamp = p.timestamp { w.longlong(timestamp) }
        try string(p.type, "type")
        try string(p.userID, "user-id")
        try string(p.appID, "app-id")
        try string(p.clusterID, "cluster-id")
        buffer = w.buffer
    }
}
