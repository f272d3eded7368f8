import Logging
import NIOCore

extension AMQPConnection {
    /// The client properties sent in `connection.start-ok`: the capabilities this client handles.
    var clientProperties: AMQPFieldTable {
        var properties: AMQPFieldTable = [
            "product": .longString("TaskerAMQP"),
            "platform": .longString("Swift"),
            "capabilities": .table([
                "publisher_confirms": .bool(true),
                "consumer_cancel_notify": .bool(true),
                "basic.nack": .bool(true),
                "connection.blocked": .bool(true),
                "authentication_failure_close": .bool(true),
            ]),
        ]
        if let name = configuration.connectionName { properties["connection_name"] = .longString(name) }
        return properties
    }

    /// The connect timeout passed: ends a connection still in its handshake (an open one stays).
    func handshakeTimedOut() {
        guard phase != .open else { return }
        end(
            .connectFailed(
                host: configuration.host, port: configuration.port, reason: "handshake timed out after \(configuration.connectTimeout)"))
    }

    func sendProtocolHeader() {
        channel.writeAndFlush(channel.allocator.buffer(bytes: AMQPFrame.protocolHeader), promise: nil)
    }

    /// A method on channel 0 before the connection is open.
    func handshake(_ method: AMQPMethod) {
        switch (phase, method) {
        case (.awaitingStart, .connectionStart(_, _, let properties, let mechanisms, _)):
            serverProperties = properties
            guard mechanisms.split(separator: " ").contains("PLAIN") else {
                end(
                    .connectFailed(
                        host: configuration.host, port: configuration.port, reason: "the broker does not offer PLAIN (\(mechanisms))"))
                return
            }
            let response = "\u{0}\(configuration.user)\u{0}\(configuration.password)"
            send(
                .method(
                    channel: 0,
                    .connectionStartOk(clientProperties: clientProperties, mechanism: "PLAIN", response: response, locale: "en_US")))
            phase = .awaitingTune
        case (.awaitingTune, .connectionTune(let serverChannelMax, let serverFrameMax, let serverHeartbeat)):
            // Below AMQP's minimum a body could not be split into frames (no room for a payload).
            guard serverFrameMax == 0 || serverFrameMax >= AMQPFrame.minimumFrameMax else {
                end(
                    .connectFailed(
                        host: configuration.host, port: configuration.port,
                        reason: "the broker proposed frame_max \(serverFrameMax), below AMQP's minimum of \(AMQPFrame.minimumFrameMax)"))
                return
            }
            channelMax = Self.negotiate(serverChannelMax, configuration.channelMax)
            // Never unlimited (0) nor below the minimum, whatever `configuration.frameMax` was set to:
            // the decoder buffers at most one frame of this size.
            frameMax = max(Self.negotiate(serverFrameMax, configuration.frameMax), AMQPFrame.minimumFrameMax)
            heartbeatSeconds = serverHeartbeat == 0 ? configuration.heartbeatSeconds : min(serverHeartbeat, configuration.heartbeatSeconds)
            if configuration.heartbeatSeconds == 0 { heartbeatSeconds = 0 }
            decoder.maximumFrameSize = frameMax
            send(.method(channel: 0, .connectionTuneOk(channelMax: channelMax, frameMax: frameMax, heartbeat: heartbeatSeconds)))
            send(.method(channel: 0, .connectionOpen(virtualHost: configuration.virtualHost)))
            phase = .awaitingOpenOk
            startHeartbeats()
        case (.awaitingOpenOk, .connectionOpenOk):
            phase = .open
            opened.succeed()
        default:
            end(.unexpectedMethod("\(method.name) during the handshake"))
        }
    }

    /// The smaller non-zero value (0 means "no limit" on both sides).
    static func negotiate<T: FixedWidthInteger>(_ server: T, _ client: T) -> T {
        if server == 0 { return client }
        if client == 0 { return server }
        return min(server, client)
    }

    /// Sends a heartbeat every half interval; ends the connection when nothing arrived for two.
    func startHeartbeats() {
        guard heartbeatSeconds > 0 else { return }
        let interval = Duration.seconds(Int(heartbeatSeconds))
        heartbeatTask = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval / 2)
                guard let self, await self.heartbeatTick(interval: interval) else { return }
            }
        }
    }

    /// One heartbeat period: false when the connection ended.
    func heartbeatTick(interval: Duration) -> Bool {
        guard endReason == nil else { return false }
        if ContinuousClock.now - lastReceived > interval * 2 {
            end(.missedHeartbeats(intervalSeconds: heartbeatSeconds))
            return false
        }
        send(.heartbeat)
        return true
    }
}
