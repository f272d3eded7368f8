import Logging
import NIOCore

extension AMQPConnection {
    /// Sends a synchronous request on channel `id` and waits for its reply (or the channel's or the
    /// connection's end).
    func rpc(_ id: UInt16, _ method: AMQPMethod, replies: Set<UInt16>, allowOpening: Bool = false) async throws(AMQPError) -> RPCReply {
        let promise = try register(id, method, replies: replies, allowOpening: allowOpening)
        send(.method(channel: id, method))
        return try await wait(for: promise)
    }

    /// Waits for `promise` (a reply, a write, a confirm) until it completes, the channel or the
    /// connection ends, or the waiting task is cancelled: then it throws `.cancelled` at once. A
    /// cancelled request stays in its channel's queue, so the broker's late reply still lands on it
    /// and not on the next request (completing a failed promise again does nothing).
    func wait<Value: Sendable>(for promise: EventLoopPromise<Value>) async throws(AMQPError) -> Value {
        do {
            return try await withTaskCancellationHandler {
                try await promise.futureResult.get()
            } onCancel: {
                promise.fail(AMQPError.cancelled)
            }
        } catch let error as AMQPError {
            throw error
        } catch {
            throw endReason ?? .connectionLost("\(error)")
        }
    }

    private func register(
        _ id: UInt16, _ method: AMQPMethod, replies: Set<UInt16>, allowOpening: Bool
    ) throws(AMQPError) -> EventLoopPromise<RPCReply> {
        try checkEncodable(method)
        guard let state = channels[id] else { throw endReason ?? .closedByClient }
        guard state.phase == .open || (allowOpening && state.phase == .opening) else { throw .closedByClient }
        let promise = channel.eventLoop.makePromise(of: RPCReply.self)
        channels[id]!.rpcs.append(PendingRPC(request: method.name, replies: replies, promise: promise))
        return promise
    }

    private func checkEncodable(_ method: AMQPMethod) throws(AMQPError) {
        var scratch = ByteBuffer()
        do {
            try method.encode(into: &scratch)
        } catch {
            throw .invalidArgument("\(error)")
        }
    }

    /// The channel's state for an operation that needs it open.
    func openState(_ id: UInt16) throws(AMQPError) -> ChannelState {
        guard let state = channels[id] else { throw endReason ?? .closedByClient }
        guard state.phase == .open else { throw .closedByClient }
        return state
    }

    func isChannelOpen(_ id: UInt16) -> Bool { channels[id]?.phase == .open }

    /// Sends a method that has no reply (ack, nack, reject).
    func sendAsync(_ id: UInt16, _ method: AMQPMethod) throws(AMQPError) {
        _ = try openState(id)
        send(.method(channel: id, method))
    }

    func closeChannel(_ id: UInt16) async throws(AMQPError) {
        guard let state = channels[id], state.phase == .open else { return }
        let promise = try register(
            id, .channelClose(AMQPCloseReason(replyCode: 200, replyText: "client closing")), replies: [41], allowOpening: false)
        channels[id]!.phase = .closing
        send(.method(channel: id, .channelClose(AMQPCloseReason(replyCode: 200, replyText: "client closing"))))
        // The close-ok forgets the channel (its number is free again only then).
        _ = try? await wait(for: promise)
    }

    func enableConfirms(_ id: UInt16) async throws(AMQPError) {
        guard try openState(id).confirms == nil else { return }
        _ = try await rpc(id, .confirmSelect, replies: [11])
        channels[id]?.confirms = ConfirmTracker()
    }

    /// Writes a message's frames; on a confirm channel, waits for the broker's ack.
    func publish(
        _ id: UInt16, exchange: String, routingKey: String, mandatory: Bool, properties: AMQPProperties, body: ByteBuffer
    ) async throws(AMQPError) {
        let state = try openState(id)
        var buffer = channel.allocator.buffer(capacity: body.readableBytes + 256)
        do {
            try FrameEncoder.encodeContent(
                channel: id, method: .basicPublish(exchange: exchange, routingKey: routingKey, mandatory: mandatory),
                properties: properties, body: body, frameMax: frameMax, into: &buffer)
        } catch {
            throw .invalidArgument("\(error)")
        }
        var confirm: EventLoopPromise<Void>?
        if var confirms = state.confirms {
            let promise = channel.eventLoop.makePromise(of: Void.self)
            confirms.pending[confirms.nextSequence] = (promise, exchange, routingKey)
            confirms.nextSequence += 1
            channels[id]!.confirms = confirms
            confirm = promise
        }
        let written = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(buffer, promise: written)
        // A failed write: the connection is going away; its end fails the confirm too. A blocked
        // broker (`connection.blocked`) stops reading: the write and the confirm wait until cancelled.
        try await wait(for: written)
        if let confirm { try await wait(for: confirm) }
    }

    /// Registers a consumer's sink (before `basic.consume` is sent, so no delivery is missed).
    func addConsumer(_ id: UInt16, tag: String, sink: ConsumerSink) throws(AMQPError) {
        _ = try openState(id)
        channels[id]!.consumers[tag] = sink
    }

    func finishConsumer(_ id: UInt16, tag: String, error: AMQPError?) {
        guard let sink = channels[id]?.consumers.removeValue(forKey: tag) else { return }
        if let error { sink.continuation.finish(throwing: error) } else { sink.continuation.finish() }
    }

    /// A consumer whose sequence was dropped by its reader: cancel it at the broker.
    func consumerTerminated(_ id: UInt16, tag: String) {
        guard channels[id]?.consumers.removeValue(forKey: tag) != nil, channels[id]?.phase == .open else { return }
        send(.method(channel: id, .basicCancel(consumerTag: tag, noWait: true)))
    }
}
