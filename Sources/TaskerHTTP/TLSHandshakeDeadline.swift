import Logging
import NIOCore
import NIOSSL
import NIOTLS

/// Closes a connection whose TLS handshake has not completed within `timeout` of its opening (the
/// gRPC server's `tls_handshake_timeout_seconds`). Without it, a client sending a byte of its
/// ClientHello now and then kept a gRPC connection open indefinitely: the transport's keepalive pings
/// wait behind the unfinished handshake, and the silence limit counts the trickled bytes as activity.
/// Sits right behind `NIOSSLServerHandler` (whose `handshakeCompleted` event it waits for) and removes
/// itself once the handshake is done. The REST servers need none: their request-head clock counts from
/// the connection's opening (`RequestHeadTimeoutHandler`).
package final class TLSHandshakeDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer

    private let timeout: TimeAmount
    private let server: String
    private let logger: Logger
    private var deadline: Scheduled<Void>?

    package init(timeout: TimeAmount, server: String, logger: Logger) {
        self.timeout = timeout
        self.server = server
        self.logger = logger
    }

    /// Adds the handler behind the connection's `NIOSSLServerHandler`; nothing when it has none (plaintext).
    package static func add(to channel: any Channel, timeout: TimeAmount, server: String, logger: Logger) throws {
        guard let tls = try? channel.pipeline.syncOperations.context(handlerType: NIOSSLServerHandler.self) else { return }
        try channel.pipeline.syncOperations.addHandler(
            TLSHandshakeDeadlineHandler(timeout: timeout, server: server, logger: logger), position: .after(tls.handler))
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    package func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            deadline?.cancel()
            deadline = nil
            context.fireUserInboundEventTriggered(event)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard deadline == nil else { return }
        let (logger, server, timeout) = (self.logger, self.server, self.timeout)
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            logger.debug(
                "closing a connection: TLS handshake not completed in time",
                metadata: [
                    "server": "\(server)", "remote": "\(context.channel.remoteAddress?.description ?? "?")", "timeout": "\(timeout)",
                ])
            context.close(promise: nil)
        }
    }
}

@available(*, unavailable)
extension TLSHandshakeDeadlineHandler: Sendable {}
