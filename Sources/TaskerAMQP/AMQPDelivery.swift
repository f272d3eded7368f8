import NIOCore

/// A message delivered to a consumer (`basic.deliver`) or fetched (`basic.get-ok`). Acknowledge it with
/// its `deliveryTag` on the channel it came from.
public struct AMQPDelivery: Sendable, Hashable {
    /// Per channel; valid only on the channel that received it.
    public let deliveryTag: UInt64
    /// True when the broker delivered this message before (to a consumer that did not ack it).
    public let redelivered: Bool
    public let exchange: String
    public let routingKey: String
    /// The consumer's tag (nil for `basic.get`).
    public let consumerTag: String?
    public let properties: AMQPProperties
    /// Empty when `discardedBodySize` is set.
    public let body: ByteBuffer
    /// Set when the body was larger than `AMQPConfiguration.maximumBodySize`: the size its header
    /// announced; the body was dropped unread as it arrived. The receiver settles such a delivery
    /// like any it cannot use (ack, or reject without requeue to dead-letter it).
    public var discardedBodySize: UInt64? = nil
}

/// A message fetched by `basic.get`, with the number of messages left in the queue.
public struct AMQPGetResult: Sendable, Hashable {
    public let delivery: AMQPDelivery
    /// Messages remaining in the queue after this one.
    public let messageCount: UInt32
}

/// The broker's answer to `queue.declare` (passive or not).
public struct AMQPQueueInfo: Sendable, Hashable {
    public let name: String
    /// Ready messages (not counting unacknowledged ones).
    public let messageCount: UInt32
    public let consumerCount: UInt32
}
