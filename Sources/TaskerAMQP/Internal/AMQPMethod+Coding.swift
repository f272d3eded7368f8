import NIOCore

extension AMQPMethod {
    /// Decodes a method frame's payload (class id, method id, arguments).
    package static func decode(_ payload: ByteBuffer) throws(AMQPFrameError) -> AMQPMethod {
        var r = WireReader(payload, context: "method")
        let classID = try r.short("class-id")
        let methodID = try r.short("method-id")
        r = WireReader(r.buffer, context: name(classID: classID, methodID: methodID))
        switch (classID, methodID) {
        case (10, 10):
            return .connectionStart(
                versionMajor: try r.octet("version-major"), versionMinor: try r.octet("version-minor"),
                serverProperties: try r.table("server-properties"), mechanisms: try r.longString("mechanisms"),
                locales: try r.longString("locales"))
        case (10, 11):
            return .connectionStartOk(
                clientProperties: try r.table("client-properties"), mechanism: try r.shortString("mechanism"),
                response: try r.longString("response"), locale: try r.shortString("locale"))
        case (10, 20): return .connectionSecure(challenge: try r.longString("challenge"))
        case (10, 30):
            return .connectionTune(
                channelMax: try r.short("channel-max"), frameMax: try r.long("frame-max"), heartbeat: try r.short("heartbeat"))
        case (10, 31):
            return .connectionTuneOk(
                channelMax: try r.short("channel-max"), frameMax: try r.long("frame-max"), heartbeat: try r.short("heartbeat"))
        case (10, 40):
            let host = try r.shortString("virtual-host")
            _ = try r.shortString("reserved-1")
            _ = try r.bit("reserved-2")
            return .connectionOpen(virtualHost: host)
        case (10, 41):
            _ = try r.shortString("reserved-1")
            return .connectionOpenOk
        case (10, 50): return .connectionClose(try closeReason(&r))
        case (10, 51): return .connectionCloseOk
        case (10, 60): return .connectionBlocked(reason: try r.shortString("reason"))
        case (10, 61): return .connectionUnblocked
        case (20, 10):
            _ = try r.shortString("reserved-1")
            return .channelOpen
        case (20, 11):
            _ = try r.longString("reserved-1")
            return .channelOpenOk
        case (20, 20): return .channelFlow(active: try r.bit("active"))
        case (20, 21): return .channelFlowOk(active: try r.bit("active"))
        case (20, 40): return .channelClose(try closeReason(&r))
        case (20, 41): return .channelCloseOk
        case (40, 10):
            _ = try r.short("reserved-1")
            var declare = ExchangeDeclare(exchange: try r.shortString("exchange"), type: try r.shortString("type"))
            declare.passive = try r.bit("passive")
            declare.durable = try r.bit("durable")
            declare.autoDelete = try r.bit("auto-delete")
            declare.internal = try r.bit("internal")
            _ = try r.bit("no-wait")
            declare.arguments = try r.table("arguments")
            return .exchangeDeclare(declare)
        case (40, 11): return .exchangeDeclareOk
        case (50, 10):
            _ = try r.short("reserved-1")
            var declare = QueueDeclare(queue: try r.shortString("queue"))
            declare.passive = try r.bit("passive")
            declare.durable = try r.bit("durable")
            declare.exclusive = try r.bit("exclusive")
            declare.autoDelete = try r.bit("auto-delete")
            _ = try r.bit("no-wait")
            declare.arguments = try r.table("arguments")
            return .queueDeclare(declare)
        case (50, 11):
            return .queueDeclareOk(
                queue: try r.shortString("queue"), messageCount: try r.long("message-count"), consumerCount: try r.long("consumer-count"))
        case (50, 20):
            _ = try r.short("reserved-1")
            let queue = try r.shortString("queue")
            let exchange = try r.shortString("exchange")
            let key = try r.shortString("routing-key")
            _ = try r.bit("no-wait")
            return .queueBind(queue: queue, exchange: exchange, routingKey: key, arguments: try r.table("arguments"))
        case (50, 21): return .queueBindOk
        case (50, 40):
            _ = try r.short("reserved-1")
            let queue = try r.shortString("queue")
            let ifUnused = try r.bit("if-unused")
            let ifEmpty = try r.bit("if-empty")
            _ = try r.bit("no-wait")
            return .queueDelete(queue: queue, ifUnused: ifUnused, ifEmpty: ifEmpty)
        case (50, 41): return .queueDeleteOk(messageCount: try r.long("message-count"))
        case (60, 10):
            return .basicQos(
                prefetchSize: try r.long("prefetch-size"), prefetchCount: try r.short("prefetch-count"), global: try r.bit("global"))
        case (60, 11): return .basicQosOk
        case (60, 20):
            _ = try r.short("reserved-1")
            let queue = try r.shortString("queue")
            let tag = try r.shortString("consumer-tag")
            _ = try r.bit("no-local")
            let noAck = try r.bit("no-ack")
            let exclusive = try r.bit("exclusive")
            _ = try r.bit("no-wait")
            return .basicConsume(queue: queue, consumerTag: tag, noAck: noAck, exclusive: exclusive, arguments: try r.table("arguments"))
        case (60, 21): return .basicConsumeOk(consumerTag: try r.shortString("consumer-tag"))
        case (60, 30): return .basicCancel(consumerTag: try r.shortString("consumer-tag"), noWait: try r.bit("no-wait"))
        case (60, 31): return .basicCancelOk(consumerTag: try r.shortString("consumer-tag"))
        case (60, 40):
            _ = try r.short("reserved-1")
            let exchange = try r.shortString("exchange")
            let key = try r.shortString("routing-key")
            let mandatory = try r.bit("mandatory")
            _ = try r.bit("immediate")
            return .basicPublish(exchange: exchange, routingKey: key, mandatory: mandatory)
        case (60, 50):
            return .basicReturn(
                replyCode: try r.short("reply-code"), replyText: try r.shortString("reply-text"),
                exchange: try r.shortString("exchange"), routingKey: try r.shortString("routing-key"))
        case (60, 60):
            return .basicDeliver(
                consumerTag: try r.shortString("consumer-tag"), deliveryTag: try r.longlong("delivery-tag"),
                redelivered: try r.bit("redelivered"), exchange: try r.shortString("exchange"), routingKey: try r.shortString("routing-key")
            )
        case (60, 70):
            _ = try r.short("reserved-1")
            return .basicGet(queue: try r.shortString("queue"), noAck: try r.bit("no-ack"))
        case (60, 71):
            return .basicGetOk(
                deliveryTag: try r.longlong("delivery-tag"), redelivered: try r.bit("redelivered"),
                exchange: try r.shortString("exchange"), routingKey: try r.shortString("routing-key"),
                messageCount: try r.long("message-count"))
        case (60, 72):
            _ = try r.shortString("reserved-1")
            return .basicGetEmpty
        case (60, 80): return .basicAck(deliveryTag: try r.longlong("delivery-tag"), multiple: try r.bit("multiple"))
        case (60, 90): return .basicReject(deliveryTag: try r.longlong("delivery-tag"), requeue: try r.bit("requeue"))
        case (60, 120):
            return .basicNack(deliveryTag: try r.longlong("delivery-tag"), multiple: try r.bit("multiple"), requeue: try r.bit("requeue"))
        case (85, 10):
            _ = try r.bit("nowait")
            return .confirmSelect
        case (85, 11): return .confirmSelectOk
        default:
            throw .unknownMethod(classID: classID, methodID: methodID)
        }
    }

    private static func closeReason(_ r: inout WireReader) throws(AMQPFrameError) -> AMQPCloseReason {
        AMQPCloseReason(
            replyCode: try r.short("reply-code"), replyText: try r.shortString("reply-text"),
            classID: try r.short("class-id"), methodID: try r.short("method-id"))
    }

    /// Appends the method's payload (class id, method id, arguments) to `buffer`.
    package func encode(into buffer: inout ByteBuffer) throws(AMQPFrameError) {
        var w = WireWriter(buffer: buffer)
        w.short(id.classID)
        w.short(id.methodID)
        try encodeArguments(&w)
        w.flushBits()
        buffer = w.buffer
    }

    private func encodeArguments(_ w: inout WireWriter) throws(AMQPFrameError) {
        let context = name
        func short(_ value: String, _ field: String) throws(AMQPFrameError) { try w.shortString(value, field: "\(context).\(field)") }
        func table(_ value: AMQPFieldTable, _ field: String) throws(AMQPFrameError) { try w.table(value, field: "\(context).\(field)") }
        switch self {
        case .connectionStart(let major, let minor, let properties, let mechanisms, let locales):
            w.octet(major)
            w.octet(minor)
            try table(properties, "server-properties")
            w.longString(mechanisms)
            w.longString(locales)
        case .connectionStartOk(let properties, let mechanism, let response, let locale):
            try table(properties, "client-properties")
            try short(mechanism, "mechanism")
            w.longString(response)
            try short(locale, "locale")
        case .connectionSecure(let challenge): w.longString(challenge)
        case .connectionTune(let channelMax, let frameMax, let heartbeat), .connectionTuneOk(let channelMax, let frameMax, let heartbeat):
            w.short(channelMax)
            w.long(frameMax)
            w.short(heartbeat)
        case .connectionOpen(let host):
            try short(host, "virtual-host")
            try short("", "reserved-1")
            w.bit(false)
        case .connectionOpenOk: try short("", "reserved-1")
        case .connectionClose(let reason), .channelClose(let reason):
            w.short(reason.replyCode)
            try short(reason.replyText, "reply-text")
            w.short(reason.classID)
            w.short(reason.methodID)
        case .connectionCloseOk, .connectionUnblocked, .channelCloseOk, .exchangeDeclareOk, .queueBindOk, .basicQosOk,
            .confirmSelectOk:
            break
        case .connectionBlocked(let reason): try short(reason, "reason")
        case .channelOpen: try short("", "reserved-1")
        case .channelOpenOk: w.longString("")
        case .channelFlow(let active), .channelFlowOk(let active): w.bit(active)
        case .exchangeDeclare(let d):
            w.short(0)
            try short(d.exchange, "exchange")
            try short(d.type, "type")
            w.bit(d.passive)
            w.bit(d.durable)
            w.bit(d.autoDelete)
            w.bit(d.internal)
            w.bit(false)
            try table(d.arguments, "arguments")
        case .queueDeclare(let d):
            w.short(0)
            try short(d.queue, "queue")
            w.bit(d.passive)
            w.bit(d.durable)
            w.bit(d.exclusive)
            w.bit(d.autoDelete)
            w.bit(false)
            try table(d.arguments, "arguments")
        case .queueDeclareOk(let queue, let messages, let consumers):
            try short(queue, "queue")
            w.long(messages)
            w.long(consumers)
        case .queueBind(let queue, let exchange, let key, let arguments):
            w.short(0)
            try short(queue, "queue")
            try short(exchange, "exchange")
            try short(key, "routing-key")
            w.bit(false)
            try table(arguments, "arguments")
        case .queueDelete(let queue, let ifUnused, let ifEmpty):
            w.short(0)
            try short(queue, "queue")
            w.bit(ifUnused)
            w.bit(ifEmpty)
            w.bit(false)
        case .queueDeleteOk(let messages): w.long(messages)
        case .basicQos(let size, let count, let global):
            w.long(size)
            w.short(count)
            w.bit(global)
        case .basicConsume(let queue, let tag, let noAck, let exclusive, let arguments):
            w.short(0)
            try short(queue, "queue")
            try short(tag, "consumer-tag")
            w.bit(false)
            w.bit(noAck)
            w.bit(exclusive)
            w.bit(false)
            try table(arguments, "arguments")
        case .basicConsumeOk(let tag), .basicCancelOk(let tag): try short(tag, "consumer-tag")
        case .basicCancel(let tag, let noWait):
            try short(tag, "consumer-tag")
            w.bit(noWait)
        case .basicPublish(let exchange, let key, let mandatory):
            w.short(0)
            try short(exchange, "exchange")
            try short(key, "routing-key")
            w.bit(mandatory)
            w.bit(false)
        case .basicReturn(let code, let text, let exchange, let key):
            w.short(code)
            try short(text, "reply-text")
            try short(exchange, "exchange")
            try short(key, "routing-key")
        case .basicDeliver(let tag, let deliveryTag, let redelivered, let exchange, let key):
            try short(tag, "consumer-tag")
            w.longlong(deliveryTag)
            w.bit(redelivered)
            try short(exchange, "exchange")
            try short(key, "routing-key")
        case .basicGet(let queue, let noAck):
            w.short(0)
            try short(queue, "queue")
            w.bit(noAck)
        case .basicGetOk(let deliveryTag, let redelivered, let exchange, let key, let count):
            w.longlong(deliveryTag)
            w.bit(redelivered)
            try short(exchange, "exchange")
            try short(key, "routing-key")
            w.long(count)
        case .basicGetEmpty: try short("", "reserved-1")
        case .basicAck(let tag, let multiple):
            w.longlong(tag)
            w.bit(multiple)
        case .basicReject(let tag, let requeue):
            w.longlong(tag)
            w.bit(requeue)
        case .basicNack(let tag, let multiple, let requeue):
            w.longlong(tag)
            w.bit(multiple)
            w.bit(requeue)
        case .confirmSelect: w.bit(false)
        }
    }
}
