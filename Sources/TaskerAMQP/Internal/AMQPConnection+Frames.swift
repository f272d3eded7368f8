import Logging
import NIOCore

extension AMQPConnection {
    /// Bytes from the socket: decoded into frames and dispatched. A codec error ends the connection
    /// with FRAME_ERROR.
    func received(_ bytes: ByteBuffer) {
        guard endReason == nil else { return }
        lastReceived = .now
        decoder.append(bytes)
        do {
            while endReason == nil, let frame = try decoder.next() {
                try dispatch(frame)
            }
        } catch {
            send(.method(channel: 0, .connectionClose(AMQPCloseReason(replyCode: AMQPCloseReason.frameError, replyText: "\(error)"))))
            end(.frame(error))
        }
    }

    private func dispatch(_ frame: AMQPFrame) throws(AMQPFrameError) {
        switch frame {
        case .heartbeat:
            return
        case .method(0, let method):
            connectionMethod(method)
        case .method(let id, let method):
            guard channels[id] != nil else { return }
            if method.carriesContent {
                try channels[id]!.assembler.start(method)
            } else {
                channelMethod(id, method)
            }
        case .header(let id, let header):
            guard channels[id] != nil else { return }
            if let message = try channels[id]!.assembler.header(header) { channelMessage(id, message) }
        case .body(let id, let body):
            guard channels[id] != nil else { return }
            if let message = try channels[id]!.assembler.body(body) { channelMessage(id, message) }
        }
    }

    private func connectionMethod(_ method: AMQPMethod) {
        switch method {
        case .connectionClose(let reason):
            send(.method(channel: 0, .connectionCloseOk))
            end(.connectionClosedByBroker(reason))
        case .connectionCloseOk:
            closeOk.succeed()
        case .connectionBlocked(let reason):
            blocked = true
            logger.warning("AMQP broker blocked publishing", metadata: ["reason": "\(reason)"])
        case .connectionUnblocked:
            blocked = false
            logger.info("AMQP broker unblocked publishing")
        default:
            if phase == .open {
                end(.unexpectedMethod("\(method.name) on channel 0"))
            } else {
                handshake(method)
            }
        }
    }

    private func channelMethod(_ id: UInt16, _ method: AMQPMethod) {
        switch method {
        case .channelClose(let reason):
            send(.method(channel: id, .channelCloseOk))
            closeChannelState(id, .channelClosedByBroker(channel: id, reason))
        case .channelFlow(let active):
            send(.method(channel: id, .channelFlowOk(active: active)))
        case .basicAck(let tag, let multiple):
            settleConfirms(id, tag: tag, multiple: multiple, nacked: false)
        case .basicNack(let tag, let multiple, _):
            settleConfirms(id, tag: tag, multiple: multiple, nacked: true)
        case .basicCancel(let tag, let noWait):
            // The broker cancelled a consumer (its queue was deleted, or its node went away).
            channels[id]?.consumers.removeValue(forKey: tag)?.continuation.finish(
                throwing: AMQPError.consumerCancelledByBroker(consumerTag: tag))
            if !noWait { send(.method(channel: id, .basicCancelOk(consumerTag: tag))) }
        case .channelCloseOk:
            // The answer to a close this client sent (`close()`, a consumer's buffer overflowed, an
            // open whose waiter was cancelled): the channel is gone, its waiters fail.
            closeChannelState(id, .closedByClient)
        case .basicCancelOk(let tag) where channels[id]?.rpcs.first?.replies.contains(31) != true:
            channels[id]?.consumers.removeValue(forKey: tag)?.continuation.finish()
        default:
            reply(id, .method(method), methodID: method.id.methodID, name: method.name)
        }
    }

    private func channelMessage(_ id: UInt16, _ message: ContentAssembler.Message) {
        switch message.method {
        case .basicDeliver(let tag, let deliveryTag, let redelivered, let exchange, let routingKey):
            let delivery = AMQPDelivery(
                deliveryTag: deliveryTag, redelivered: redelivered, exchange: exchange, routingKey: routingKey,
                consumerTag: tag, properties: message.properties, body: message.body,
                discardedBodySize: message.discardedBodySize)
            guard let sink = channels[id]?.consumers[tag] else { return }
            if case .dropped = sink.continuation.yield(delivery) {
                let error = AMQPError.deliveryBufferOverflow(consumerTag: tag, limit: sink.bufferLimit)
                logger.error("AMQP consumer too slow; closing its channel", metadata: ["error": "\(error)"])
                sink.continuation.finish(throwing: error)
                channels[id]?.consumers[tag] = nil
                send(.method(channel: id, .channelClose(AMQPCloseReason(replyCode: 200, replyText: "consumer buffer overflow"))))
                channels[id]?.phase = .closing
            }
        case .basicReturn(let code, let text, _, _):
            channels[id]?.confirms?.returned = AMQPCloseReason(replyCode: code, replyText: text)
        case .basicGetOk:
            reply(id, .message(message), methodID: 71, name: "basic.get-ok")
        default:
            return
        }
    }

    /// The head request of the channel gets its reply; a reply nobody asked for ends the connection.
    private func reply(_ id: UInt16, _ reply: RPCReply, methodID: UInt16, name: String) {
        guard let head = channels[id]?.rpcs.first, head.replies.contains(methodID) else {
            end(.unexpectedMethod("\(name) on channel \(id) answers no pending request"))
            return
        }
        channels[id]!.rpcs.removeFirst()
        head.promise.succeed(reply)
    }

    private func settleConfirms(_ id: UInt16, tag: UInt64, multiple: Bool, nacked: Bool) {
        guard var confirms = channels[id]?.confirms else { return }
        let settled = confirms.settle(tag, multiple: multiple)
        let returned = confirms.returned
        if !settled.isEmpty { confirms.returned = nil }
        channels[id]!.confirms = confirms
        for (index, (promise, exchange, routingKey)) in settled.enumerated() {
            if nacked {
                promise.fail(AMQPError.publishNacked(exchange: exchange, routingKey: routingKey))
            } else if index == 0, let returned {
                promise.fail(AMQPError.publishReturned(exchange: exchange, routingKey: routingKey, returned))
            } else {
                promise.succeed()
            }
        }
    }

    /// Forgets a channel and fails what waited on it.
    func closeChannelState(_ id: UInt16, _ error: AMQPError) {
        guard let state = channels.removeValue(forKey: id) else { return }
        state.failAll(error)
    }
}
