import Logging
import NIOCore
import NIOHTTPTypes
import NIOSSL

/// Closes an HTTP/1 connection whose request head (request line and headers) does not arrive in
/// time (`worker.web.header_read_timeout_seconds`, `orchestration.web.header_read_timeout_seconds`): the defence against slowloris clients, which
/// open connections, send part of a request and stall.
///
/// The clock starts when the connection opens, and on a keep-alive connection at the first byte of
/// the next request (between requests the idle timeout applies); it stops when the head has been
/// parsed. Added after the HTTP codec (through `HTTP1Channel.Configuration.additionalChannelHandlers`);
/// it puts a `RequestBytesObserver` at the front of the pipeline (behind TLS, when the server has it)
/// to see raw bytes before the decoder buffers them. Both handlers live on the connection's event loop.
final class RequestHeadTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    package typealias InboundIn = HTTPRequestPart
    package typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    package typealias OutboundOut = HTTPResponsePart

    private let timeout: TimeAmount
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var deadline: Scheduled<Void>?
    /// Request heads read whose response has not ended yet.
    private var requestsInProgress = 0

    package init(timeout: TimeAmount, logger: Logger) {
        self.timeout = timeout
        self.logger = logger
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // Sees the raw bytes ahead of the HTTP decoder, which holds a partial head back: the front of
        // the pipeline, or right behind TLS (the request's bytes, not the records': a TLS handshake
        // that stalls is timed by the clock started at connection open).
        let observer = RequestBytesObserver(owner: self)
        if let tls = try? context.pipeline.syncOperations.context(handlerType: NIOSSLServerHandler.self) {
            try? context.pipeline.syncOperations.addHandler(observer, position: .after(tls.handler))
        } else {
            try? context.pipeline.syncOperations.addHandler(observer, position: .first)
        }
        if context.channel.isActive { arm() }
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
        self.context = nil
    }

    package func channelActive(context: ChannelHandlerContext) {
        arm()
        context.fireChannelActive()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            requestsInProgress += 1
            disarm()
        }
        context.fireChannelRead(data)
    }

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            requestsInProgress = max(0, requestsInProgress - 1)
        }
        context.write(data, promise: promise)
    }

    /// Bytes arrived: between requests they start the next request, and its head's clock.
    fileprivate func bytesArrived() {
        if requestsInProgress == 0 { arm() }
    }

    private func arm() {
        guard deadline == nil, let context else { return }
        let logger = self.logger
        let timeout = self.timeout
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            logger.debug(
                "closing an HTTP connection: no complete request head",
                metadata: [
                    "remote": "\(context.channel.remoteAddress?.description ?? "?")", "timeout": "\(timeout)",
                ])
            context.close(promise: nil)
        }
    }

    private func disarm() {
        deadline?.cancel()
        deadline = nil
    }
}

@available(*, unavailable)
extension RequestHeadTimeoutHandler: Sendable {}

/// Tells its `RequestHeadTimeoutHandler` when bytes arrive; passes everything on unchanged.
final class RequestBytesObserver: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer

    private let owner: RequestHeadTimeoutHandler

    fileprivate init(owner: RequestHeadTimeoutHandler) {
        self.owner = owner
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if unwrapInboundIn(data).readableBytes > 0 { owner.bytesArrived() }
        context.fireChannelRead(data)
    }
}

@available(*, unavailable)
extension RequestBytesObserver: Sendable {}
