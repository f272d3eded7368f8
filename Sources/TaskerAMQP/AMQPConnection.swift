import Logging
import NIOCore
import NIOPosix

/// One AMQP 0-9-1 connection to a broker (RabbitMQ): the handshake (PLAIN), heartbeats, channels.
///
/// All protocol state lives in this actor; a reader task feeds it the received bytes. When the
/// connection ends — closed by the broker (e.g. 320 CONNECTION_FORCED), lost, silent past two
/// heartbeat intervals, or closed by `close()` — every pending operation on every channel fails with
/// the reason, and `closed()` returns it.
public actor AMQPConnection {
    package enum Phase { case awaitingStart, awaitingTune, awaitingOpenOk, open, closing, closed }

    public nonisolated let configuration: AMQPConfiguration
    nonisolated let channel: any Channel
    let logger: Logger
    package var phase = Phase.awaitingStart
    package var decoder = FrameDecoder(maximumFrameSize: AMQPFrame.minimumFrameMax)
    /// Negotiated in `connection.tune`.
    var frameMax: UInt32 = AMQPFrame.minimumFrameMax
    var channelMax: UInt16 = 0
    package var heartbeatSeconds: UInt16 = 0
    var serverProperties: AMQPFieldTable = [:]
    package var channels: [UInt16: ChannelState] = [:]
    var lastChannelID: UInt16 = 0
    var lastReceived = ContinuousClock.now
    var heartbeatTask: Task<Void, Never>?
    package var blocked = false
    let opened: EventLoopPromise<Void>
    let closeOk: EventLoopPromise<Void>
    /// Why the connection ended; set once.
    var endReason: AMQPError?
    let ended: EventLoopPromise<AMQPError>

    init(configuration: AMQPConfiguration, channel: any Channel, logger: Logger) {
        self.configuration = configuration
        self.channel = channel
        self.logger = logger
        opened = channel.eventLoop.makePromise()
        closeOk = channel.eventLoop.makePromise()
        ended = channel.eventLoop.makePromise()
    }

    /// Connects, authenticates (PLAIN), tunes and opens the virtual host; fails with
    /// `AMQPError.connectFailed` or the broker's close reason (e.g. 403 ACCESS_REFUSED) within
    /// `configuration.connectTimeout`.
    public static func connect(
        _ configuration: AMQPConfiguration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "amqp")
    ) async throws(AMQPError) -> AMQPConnection {
        let asyncChannel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            asyncChannel = try await ClientBootstrap(group: eventLoopGroup)
                .connectTimeout(TimeAmount(configuration.connectTimeout))
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connect(host: configuration.host, port: configuration.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw .connectFailed(host: configuration.host, port: configuration.port, reason: "\(error)")
        }
        let connection = AMQPConnection(configuration: configuration, channel: asyncChannel.channel, logger: logger)
        connection.startReading(asyncChannel)
        let timeout = asyncChannel.channel.eventLoop.scheduleTask(in: TimeAmount(configuration.connectTimeout)) {
            Task { await connection.handshakeTimedOut() }
        }
        defer { timeout.cancel() }
        await connection.sendProtocolHeader()
        do {
            try await connection.opened.futureResult.get()
        } catch let error as AMQPError {
            switch error {
            case .connectFailed: throw error
            case .connectionClosedByBroker(let reason):
                throw .connectFailed(host: configuration.host, port: configuration.port, reason: "\(reason)")
            default:
                throw .connectFailed(host: configuration.host, port: configuration.port, reason: "\(error)")
            }
        } catch {
            throw .connectFailed(host: configuration.host, port: configuration.port, reason: "\(error)")
        }
        return connection
    }

    private nonisolated func startReading(_ asyncChannel: NIOAsyncChannel<ByteBuffer, ByteBuffer>) {
        // The reader lives as long as the socket: it ends when the channel closes, which every path
        // of `end` does, so it never outlives the connection.
        Task {
            do {
                try await asyncChannel.executeThenClose { inbound, _ in
                    for try await bytes in inbound {
                        await self.received(bytes)
                    }
                }
                await self.end(.connectionLost("the broker closed the TCP connection"))
            } catch {
                await self.end(.connectionLost("\(error)"))
            }
        }
    }

    /// Whether the connection is open (the handshake finished and it has not ended).
    public var isOpen: Bool { phase == .open }

    /// Whether the broker has blocked publishing (`connection.blocked`, e.g. low memory or disk).
    public var isBlocked: Bool { blocked }

    /// The negotiated limits.
    public var negotiatedFrameMax: UInt32 { frameMax }
    public var negotiatedChannelMax: UInt16 { channelMax }
    public var negotiatedHeartbeatSeconds: UInt16 { heartbeatSeconds }

    /// Waits until the connection has ended and returns why (`.closedByClient` after `close()`).
    public nonisolated func closed() async -> AMQPError {
        (try? await ended.futureResult.get()) ?? .closedByClient
    }

    /// Opens a new channel.
    public func openChannel() async throws(AMQPError) -> AMQPChannel {
        guard phase == .open else { throw endReason ?? .closedByClient }
        let limit = channelMax == 0 ? UInt16.max : channelMax
        var id = lastChannelID
        for _ in 0..<Int(limit) {
            id = id >= limit ? 1 : id + 1
            if channels[id] == nil { break }
        }
        guard channels[id] == nil, id != 0 else { throw .channelLimitReached(limit) }
        lastChannelID = id
        channels[id] = ChannelState(id: id, maximumBodySize: configuration.maximumBodySize)
        do throws(AMQPError) {
            _ = try await rpc(id, .channelOpen, replies: [11], allowOpening: true)
        } catch {
            if error == .cancelled, channels[id]?.phase == .opening {
                // Nobody will use the channel: close it behind the open (its close-ok frees the number).
                channels[id]?.phase = .closing
                send(.method(channel: id, .channelClose(AMQPCloseReason(replyCode: 200, replyText: "client closing"))))
            }
            throw error
        }
        channels[id]?.phase = .open
        return AMQPChannel(connection: self, id: id)
    }

    /// Closes the connection (`connection.close` 200, waiting up to 5 s for the broker's close-ok).
    /// Every pending operation fails with `.closedByClient`.
    public func close() async {
        guard phase == .open else {
            end(.closedByClient)
            return
        }
        phase = .closing
        send(.method(channel: 0, .connectionClose(AMQPCloseReason(replyCode: 200, replyText: "client closing"))))
        let timer = channel.eventLoop.scheduleTask(in: .seconds(5)) { [closeOk] in closeOk.succeed() }
        try? await closeOk.futureResult.get()
        timer.cancel()
        end(.closedByClient)
    }

    /// Ends the connection once: fails every waiter with `reason`, stops heartbeats, closes the socket.
    package func end(_ reason: AMQPError) {
        guard endReason == nil else { return }
        endReason = reason
        phase = .closed
        heartbeatTask?.cancel()
        let open = channels
        channels = [:]
        for state in open.values { state.failAll(reason) }
        opened.fail(reason)
        closeOk.succeed()
        ended.succeed(reason)
        channel.close(promise: nil)
        switch reason {
        case .closedByClient: logger.debug("AMQP connection closed")
        default: logger.warning("AMQP connection ended", metadata: ["reason": "\(reason)"])
        }
    }

    /// Encodes and writes a frame without waiting for the write.
    package func send(_ frame: AMQPFrame) {
        var buffer = channel.allocator.buffer(capacity: 64)
        do {
            try FrameEncoder.encode(frame, into: &buffer)
        } catch {
            logger.error("AMQP frame not encodable", metadata: ["error": "\(error)"])
            return
        }
        channel.writeAndFlush(buffer, promise: nil)
    }
}
