import NIOCore

/// A synchronous request waiting for its reply on one channel (replies come in request order).
struct PendingRPC {
    /// What was asked, for errors (`queue.declare`).
    package let request: String
    /// The method ids (same class) that answer it.
    package let replies: Set<UInt16>
    package let promise: EventLoopPromise<RPCReply>
}

/// The answer to a synchronous request: a method, or a message for `basic.get-ok`.
enum RPCReply: Sendable {
    case method(AMQPMethod)
    case message(ContentAssembler.Message)
}

/// Where a consumer's deliveries go.
package struct ConsumerSink {
    package let continuation: AsyncThrowingStream<AMQPDelivery, any Error>.Continuation
    package let bufferLimit: Int
}

/// Publisher-confirm bookkeeping of a channel in confirm mode: one promise per publish the callers
/// are waiting for (bounded by those callers), settled by the broker's acks and nacks.
package struct ConfirmTracker {
    var nextSequence: UInt64 = 1
    package var pending: [UInt64: (promise: EventLoopPromise<Void>, exchange: String, routingKey: String)] = [:]
    /// A `basic.return` fails the publish that the next confirm settles.
    package var returned: AMQPCloseReason?

    /// The publishes settled by an ack/nack of `tag` (with `multiple`, every one up to it).
    package mutating func settle(_ tag: UInt64, multiple: Bool) -> [(EventLoopPromise<Void>, String, String)] {
        let tags = multiple ? pending.keys.filter { $0 <= tag }.sorted() : (pending[tag] == nil ? [] : [tag])
        return tags.map { tag in
            let entry = pending.removeValue(forKey: tag)!
            return (entry.promise, entry.exchange, entry.routingKey)
        }
    }
}

/// Everything the connection knows about one open channel.
package struct ChannelState {
    package enum Phase { case opening, open, closing }
    package var phase = Phase.opening
    var rpcs: [PendingRPC] = []
    var assembler: ContentAssembler
    package var confirms: ConfirmTracker?
    package var consumers: [String: ConsumerSink] = [:]

    package init(id: UInt16, maximumBodySize: UInt64) {
        assembler = ContentAssembler(channel: id, maximumBodySize: maximumBodySize)
    }

    /// Fails every waiter of the channel with `error` (it closed).
    func failAll(_ error: AMQPError) {
        for rpc in rpcs { rpc.promise.fail(error) }
        if let confirms {
            for entry in confirms.pending.values { entry.promise.fail(error) }
        }
        for sink in consumers.values { sink.continuation.finish(throwing: error) }
    }
}
