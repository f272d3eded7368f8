/// Why an AMQP operation failed. Every pending operation of a closed channel or connection fails
/// with the reason that closed it; nothing waits forever.
public enum AMQPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The broker closed the connection (`connection.close`, e.g. 320 CONNECTION_FORCED).
    case connectionClosedByBroker(AMQPCloseReason)
    /// The broker closed the channel (`channel.close`, e.g. 406 PRECONDITION_FAILED, 404 NOT_FOUND).
    case channelClosedByBroker(channel: UInt16, AMQPCloseReason)
    /// The TCP connection failed or ended without a close handshake.
    case connectionLost(String)
    /// Nothing arrived from the broker for two heartbeat intervals.
    case missedHeartbeats(intervalSeconds: UInt16)
    /// Could not connect (TCP, the handshake, or authentication refused).
    case connectFailed(host: String, port: Int, reason: String)
    /// Bytes from the broker could not be decoded (the connection is closed with FRAME_ERROR).
    case frame(AMQPFrameError)
    /// The broker sent a method this state does not allow.
    case unexpectedMethod(String)
    /// The client closed this connection or channel.
    case closedByClient
    /// The broker refused a confirmed publish (`basic.nack`).
    case publishNacked(exchange: String, routingKey: String)
    /// A mandatory publish could not be routed (`basic.return`, e.g. 312 NO_ROUTE).
    case publishReturned(exchange: String, routingKey: String, AMQPCloseReason)
    /// The broker cancelled the consumer (its queue was deleted, or the node went away).
    case consumerCancelledByBroker(consumerTag: String)
    /// A consumer's client-side buffer overflowed (its consumer was slower than the prefetch allowed);
    /// the channel is closed so that its unacknowledged deliveries return to the queue.
    case deliveryBufferOverflow(consumerTag: String, limit: Int)
    /// No free channel number under the negotiated channel_max.
    case channelLimitReached(UInt16)
    /// A caller's argument cannot be sent (e.g. a name over 255 bytes).
    case invalidArgument(String)
    /// The waiting task was cancelled. The request was sent and may still take effect at the broker;
    /// its late reply is consumed without reaching anyone.
    case cancelled

    public var description: String {
        switch self {
        case .connectionClosedByBroker(let reason): "AMQP connection closed by the broker: \(reason)"
        case .channelClosedByBroker(let channel, let reason): "AMQP channel \(channel) closed by the broker: \(reason)"
        case .connectionLost(let what): "AMQP connection lost: \(what)"
        case .missedHeartbeats(let seconds): "AMQP broker silent for two heartbeat intervals of \(seconds) s"
        case .connectFailed(let host, let port, let reason): "could not connect to AMQP broker \(host):\(port): \(reason)"
        case .frame(let error): "AMQP protocol error: \(error)"
        case .unexpectedMethod(let what): "unexpected AMQP method: \(what)"
        case .closedByClient: "AMQP connection or channel closed by the client"
        case .publishNacked(let exchange, let key): "the broker nacked the publish to exchange '\(exchange)' routing key '\(key)'"
        case .publishReturned(let exchange, let key, let reason):
            "the broker returned the publish to exchange '\(exchange)' routing key '\(key)': \(reason)"
        case .consumerCancelledByBroker(let tag): "the broker cancelled consumer \(tag)"
        case .deliveryBufferOverflow(let tag, let limit): "consumer \(tag) buffered more than \(limit) deliveries"
        case .channelLimitReached(let max): "no free AMQP channel (channel_max \(max))"
        case .invalidArgument(let what): "invalid AMQP argument: \(what)"
        case .cancelled: "the wait for the AMQP broker was cancelled"
        }
    }

    /// The reply code when the broker closed the channel or connection.
    public var replyCode: UInt16? {
        switch self {
        case .connectionClosedByBroker(let reason), .channelClosedByBroker(_, let reason): reason.replyCode
        default: nil
        }
    }
}
