import Logging
import NIOCore

/// Closes a gRPC connection from which nothing at all has arrived for `limit`
/// (`keepalive_interval_seconds + keepalive_timeout_seconds`).
///
/// grpc-swift's keepalive already closes a client that does not answer the server's ping, but once
/// the server has started closing a connection gracefully (GOAWAY after `idle_timeout_seconds` or
/// `max_connection_age_seconds`) it stops its keepalive and waits for the client to acknowledge the
/// GOAWAY's ping, for ever if the client never answers. A healthy client is never silent that long:
/// the server pings it after `keepalive_interval_seconds` without input, and it answers within
/// `keepalive_timeout_seconds`. Sits first in the connection's pipeline, sees raw bytes only.
final class SilentConnectionCloser: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let limit: TimeAmount
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var deadline: Scheduled<Void>?
    /// When the last bytes arrived (the timer is not rescheduled on every read).
    private var lastInput = NIODeadline.now()

    init(limit: TimeAmount, logger: Logger) {
        self.limit = limit
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        start()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastInput = .now()
        context.fireChannelRead(data)
    }

    private func start() {
        guard deadline == nil else { return }
        lastInput = .now()
        schedule(at: lastInput + limit)
    }

    private func stop() {
        deadline?.cancel()
        deadline = nil
    }

    private func schedule(at instant: NIODeadline) {
        guard let context else { return }
        deadline = context.eventLoop.assumeIsolated().scheduleTask(deadline: instant) { [self] in
            deadline = nil
            guard let context = self.context else { return }
            let silentUntil = lastInput + limit
            guard silentUntil <= .now() else { return schedule(at: silentUntil) }
            logger.debug(
                "closing a silent gRPC connection",
                metadata: [
                    "remote": "\(context.channel.remoteAddress?.description ?? "?")", "silent_for": "\(limit)",
                ])
            context.close(promise: nil)
        }
    }
}

@available(*, unavailable)
extension SilentConnectionCloser: Sendable {}
