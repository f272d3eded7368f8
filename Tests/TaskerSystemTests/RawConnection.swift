import NIOCore
import NIOPosix
import Synchronization

/// A plain TCP client for the connection-limit tests: sends exactly what it is told, records what
/// arrives and whether the server closed the connection.
///
/// With `http2` it also plays a minimal HTTP/2 client (RFC 9113): it sends the connection preface,
/// acknowledges the server's SETTINGS and answers its PINGs, as gRPC clients do, and counts GOAWAY
/// frames; `.silentAfterGoAway` stops sending anything once a GOAWAY arrived.
struct RawConnection: Sendable {
    enum HTTP2Client: Sendable { case answersPings, silentAfterGoAway }

    struct Record: Sendable {
        var bytes: [UInt8] = []
        var closed = false
        var goAways = 0
    }

    let channel: any Channel
    private let record: RecordBox

    /// `from`: the local IP address to connect from (e.g. `127.0.0.2`, another client on loopback).
    static func connect(host: String, port: Int, http2: HTTP2Client? = nil, from: String? = nil) async throws -> RawConnection {
        let record = RecordBox()
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        if let from { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: from, port: 0)) }
        let channel =
            try await bootstrap
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(RecordingHandler(record: record, http2: http2))
                }
            }
            .connect(host: host, port: port).get()
        return RawConnection(channel: channel, record: record)
    }

    func send(_ text: String) async throws {
        try await send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes))
    }

    /// Everything received so far, as text.
    var received: String { String(decoding: record.value.bytes, as: UTF8.self) }
    /// Bytes received so far.
    var receivedCount: Int { record.value.bytes.count }
    /// The server closed the connection (or it broke).
    var isClosed: Bool { record.value.closed }
    /// HTTP/2 GOAWAY frames received.
    var goAways: Int { record.value.goAways }

    func close() async {
        try? await channel.close()
    }
}

/// The `RawConnection`s a test opened, closed together before its server stops (a server's graceful
/// shutdown waits for open connections, so a failing test must not leave any behind).
final class RawConnections: Sendable {
    private let opened = Mutex<[RawConnection]>([])

    func connect(host: String, port: Int, http2: RawConnection.HTTP2Client? = nil, from: String? = nil) async throws -> RawConnection {
        let connection = try await RawConnection.connect(host: host, port: port, http2: http2, from: from)
        opened.withLock { $0.append(connection) }
        return connection
    }

    func closeAll() async {
        for connection in opened.withLock({ $0 }) { await connection.close() }
    }
}

/// What a `RawConnection` saw; written on the channel's event loop, read by the test.
final class RecordBox: Sendable {
    private let state = Mutex(RawConnection.Record())
    var value: RawConnection.Record { state.withLock { $0 } }
    func update(_ body: (inout RawConnection.Record) -> Void) { state.withLock { body(&$0) } }
}

private final class RecordingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let record: RecordBox
    let http2: RawConnection.HTTP2Client?
    private var pending: [UInt8] = []
    private var silent = false

    init(record: RecordBox, http2: RawConnection.HTTP2Client?) {
        self.record = record
        self.http2 = http2
    }

    /// One HTTP/2 frame on stream 0.
    static func frame(type: UInt8, flags: UInt8, payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type, flags, 0, 0, 0, 0] + payload
    }

    func channelActive(context: ChannelHandlerContext) {
        if http2 != nil {  // the client connection preface: the magic, then an empty SETTINGS frame
            reply(context, Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + Self.frame(type: 4, flags: 0, payload: []))
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = Array(buffer: unwrapInboundIn(data))
        record.update { $0.bytes += bytes }
        guard let http2 else { return }
        pending += bytes
        while pending.count >= 9 {
            let length = Int(pending[0]) << 16 | Int(pending[1]) << 8 | Int(pending[2])
            guard pending.count >= 9 + length else { break }
            let type = pending[3]
            let flags = pending[4]
            let payload = Array(pending[9..<(9 + length)])
            pending.removeFirst(9 + length)
            switch type {
            case 7:  // GOAWAY
                record.update { $0.goAways += 1 }
                if http2 == .silentAfterGoAway { silent = true }
            case 4 where flags & 1 == 0:  // SETTINGS → ACK
                reply(context, Self.frame(type: 4, flags: 1, payload: []))
            case 6 where flags & 1 == 0:  // PING → ACK
                reply(context, Self.frame(type: 6, flags: 1, payload: payload))
            default:
                break
            }
        }
    }

    private func reply(_ context: ChannelHandlerContext, _ bytes: [UInt8]) {
        guard !silent else { return }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        record.update { $0.closed = true }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
