import NIOCore

/// One AMQP channel of a connection. Synchronous requests are answered in order; when the broker
/// closes the channel (e.g. 406 PRECONDITION_FAILED on a re-declaration with other arguments) every
/// pending and later operation fails with `AMQPError.channelClosedByBroker`; open a new channel.
public struct AMQPChannel: Sendable {
    public let connection: AMQPConnection
    /// The channel number on the connection.
    public let id: UInt16

    /// Whether the channel is open (false once either side closed it or the connection ended).
    public var isOpen: Bool {
        get async { await connection.isChannelOpen(id) }
    }

    /// Declares an exchange (`exchange.declare`).
    public func declareExchange(
        _ name: String, type: String = "direct", durable: Bool = false, autoDelete: Bool = false,
        internal: Bool = false, passive: Bool = false, arguments: AMQPFieldTable = [:]
    ) async throws(AMQPError) {
        let declare = AMQPMethod.ExchangeDeclare(
            exchange: name, type: type, passive: passive, durable: durable, autoDelete: autoDelete, internal: `internal`,
            arguments: arguments)
        _ = try await connection.rpc(id, .exchangeDeclare(declare), replies: [11])
    }

    /// Declares a queue (`queue.declare`); an empty name lets the broker choose one.
    @discardableResult
    public func declareQueue(
        _ name: String, durable: Bool = false, exclusive: Bool = false, autoDelete: Bool = false,
        arguments: AMQPFieldTable = [:]
    ) async throws(AMQPError) -> AMQPQueueInfo {
        let declare = AMQPMethod.QueueDeclare(
            queue: name, durable: durable, exclusive: exclusive, autoDelete: autoDelete, arguments: arguments)
        return try await queueDeclare(declare)
    }

    /// A passive `queue.declare`: the queue's depth and consumers, or 404 NOT_FOUND (which closes
    /// the channel) when it does not exist.
    public func inspectQueue(_ name: String) async throws(AMQPError) -> AMQPQueueInfo {
        try await queueDeclare(AMQPMethod.QueueDeclare(queue: name, passive: true))
    }

    private func queueDeclare(_ declare: AMQPMethod.QueueDeclare) async throws(AMQPError) -> AMQPQueueInfo {
        guard
            case .method(.queueDeclareOk(let queue, let messages, let consumers)) = try await connection.rpc(
                id, .queueDeclare(declare), replies: [11])
        else { throw .unexpectedMethod("queue.declare answered without declare-ok") }
        return AMQPQueueInfo(name: queue, messageCount: messages, consumerCount: consumers)
    }

    /// Deletes a queue; returns how many messages it held.
    @discardableResult
    public func deleteQueue(_ name: String, ifUnused: Bool = false, ifEmpty: Bool = false) async throws(AMQPError) -> UInt32 {
        guard
            case .method(.queueDeleteOk(let count)) = try await connection.rpc(
                id, .queueDelete(queue: name, ifUnused: ifUnused, ifEmpty: ifEmpty), replies: [41])
        else { throw .unexpectedMethod("queue.delete answered without delete-ok") }
        return count
    }

    /// Binds a queue to an exchange (`queue.bind`).
    public func bindQueue(_ queue: String, exchange: String, routingKey: String, arguments: AMQPFieldTable = [:]) async throws(AMQPError) {
        _ = try await connection.rpc(
            id, .queueBind(queue: queue, exchange: exchange, routingKey: routingKey, arguments: arguments), replies: [21])
    }

    /// Limits unacknowledged deliveries to this channel's consumers (`basic.qos`; `global` = per channel).
    public func setPrefetch(count: UInt16, global: Bool = false) async throws(AMQPError) {
        _ = try await connection.rpc(id, .basicQos(prefetchSize: 0, prefetchCount: count, global: global), replies: [11])
    }

    /// Puts the channel in confirm mode (`confirm.select`): from then on `publish` returns only when the
    /// broker has taken responsibility for the message.
    public func enablePublisherConfirms() async throws(AMQPError) {
        try await connection.enableConfirms(id)
    }

    /// Publishes a message (`basic.publish`; the body split at the negotiated frame_max). In confirm
    /// mode it returns when the broker acks, and throws `publishNacked`, `publishReturned` (a mandatory
    /// message no queue took) or the channel's/connection's close reason.
    public func publish(
        _ body: ByteBuffer, exchange: String = "", routingKey: String, mandatory: Bool = false,
        properties: AMQPProperties = AMQPProperties()
    ) async throws(AMQPError) {
        try await connection.publish(
            id, exchange: exchange, routingKey: routingKey, mandatory: mandatory, properties: properties, body: body)
    }

    /// Starts a consumer with manual acknowledgements (`basic.consume`). Deliveries are buffered up
    /// to `bufferLimit` on the client (set the prefetch at or below it); a consumer that falls further
    /// behind gets `deliveryBufferOverflow` and the channel is closed, so that the broker requeues
    /// its unacknowledged messages instead of the client buffering without bound.
    public func consume(
        queue: String, consumerTag: String? = nil, exclusive: Bool = false, arguments: AMQPFieldTable = [:],
        bufferLimit: Int = 1024
    ) async throws(AMQPError) -> AMQPConsumer {
        let tag = consumerTag ?? "amqp-consumer-\(UInt64.random(in: 0...UInt64.max))"
        let (stream, continuation) = AsyncThrowingStream<AMQPDelivery, any Error>.makeStream(
            bufferingPolicy: .bufferingOldest(max(1, bufferLimit)))
        let connection = connection
        let id = id
        continuation.onTermination = { _ in
            Task { await connection.consumerTerminated(id, tag: tag) }
        }
        try await connection.addConsumer(id, tag: tag, sink: ConsumerSink(continuation: continuation, bufferLimit: bufferLimit))
        do {
            _ = try await connection.rpc(
                id, .basicConsume(queue: queue, consumerTag: tag, noAck: false, exclusive: exclusive, arguments: arguments), replies: [21])
        } catch {
            await connection.finishConsumer(id, tag: tag, error: error)
            throw error
        }
        return AMQPConsumer(consumerTag: tag, channel: self, stream: stream)
    }

    /// Cancels a consumer (`basic.cancel`); its sequence ends once the broker confirmed.
    public func cancel(consumerTag: String) async throws(AMQPError) {
        _ = try await connection.rpc(id, .basicCancel(consumerTag: consumerTag, noWait: false), replies: [31])
        await connection.finishConsumer(id, tag: consumerTag, error: nil)
    }

    /// Fetches one message with manual acknowledgement (`basic.get`); nil when the queue is empty.
    public func get(queue: String) async throws(AMQPError) -> AMQPGetResult? {
        switch try await connection.rpc(id, .basicGet(queue: queue, noAck: false), replies: [71, 72]) {
        case .message(let message):
            guard case .basicGetOk(let tag, let redelivered, let exchange, let routingKey, let count) = message.method else {
                throw .unexpectedMethod("basic.get answered with \(message.method.name)")
            }
            let delivery = AMQPDelivery(
                deliveryTag: tag, redelivered: redelivered, exchange: exchange, routingKey: routingKey, consumerTag: nil,
                properties: message.properties, body: message.body,
                discardedBodySize: message.discardedBodySize)
            return AMQPGetResult(delivery: delivery, messageCount: count)
        case .method:
            return nil
        }
    }

    /// Acknowledges a delivery (with `multiple`, every one up to it).
    public func ack(deliveryTag: UInt64, multiple: Bool = false) async throws(AMQPError) {
        try await connection.sendAsync(id, .basicAck(deliveryTag: deliveryTag, multiple: multiple))
    }

    /// Rejects a delivery; with `requeue` the broker delivers it again (marked redelivered).
    public func nack(deliveryTag: UInt64, multiple: Bool = false, requeue: Bool) async throws(AMQPError) {
        try await connection.sendAsync(id, .basicNack(deliveryTag: deliveryTag, multiple: multiple, requeue: requeue))
    }

    /// Closes the channel (unacknowledged deliveries return to their queues).
    public func close() async throws(AMQPError) {
        try await connection.closeChannel(id)
    }
}

/// A consumer's deliveries, in order. The sequence ends after `cancel`, and throws the reason when
/// the broker cancels the consumer or the channel/connection closes.
public struct AMQPConsumer: AsyncSequence, Sendable {
    public typealias Element = AMQPDelivery
    public let consumerTag: String
    public let channel: AMQPChannel
    let stream: AsyncThrowingStream<AMQPDelivery, any Error>

    public func makeAsyncIterator() -> AsyncThrowingStream<AMQPDelivery, any Error>.AsyncIterator {
        stream.makeAsyncIterator()
    }
}
