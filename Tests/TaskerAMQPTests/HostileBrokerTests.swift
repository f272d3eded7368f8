import NIOCore
import NIOPosix
import Testing

@testable import TaskerAMQP

/// What a broken or hostile peer can send that RabbitMQ never does: a scripted server on 127.0.0.1
/// answers the client's protocol header with fixed frames and then stays silent.
@Suite("AMQP client against a hostile broker")
struct HostileBrokerTests {
    @Test func aTuneBelowTheMinimumFrameMaxIsRefusedAtOnce() async throws {
        var script = ByteBuffer()
        try FrameEncoder.encode(
            .method(
                channel: 0,
                .connectionStart(versionMajor: 0, versionMinor: 9, serverProperties: [:], mechanisms: "PLAIN", locales: "en_US")),
            into: &script)
        // frame_max 8 leaves no room for a body frame's payload.
        try FrameEncoder.encode(.method(channel: 0, .connectionTune(channelMax: 0, frameMax: 8, heartbeat: 0)), into: &script)
        let broker = try await ScriptedBroker.start(answering: script)
        defer { broker.close(promise: nil) }
        let configuration = AMQPConfiguration(
            host: "127.0.0.1", port: try #require(broker.localAddress?.port), connectTimeout: .seconds(120))
        let started = ContinuousClock.now
        await #expect {
            try await AMQPConnection.connect(configuration)
        } throws: { error in
            "\(error)".contains("frame_max 8, below AMQP's minimum of 4096")
        }
        // Refused by the tune check, not left to the connect timeout (120 s: far from any CPU-starved run).
        #expect(ContinuousClock.now - started < .seconds(60))
    }
}

/// A listening socket whose connections get `script` in answer to their first bytes; all else is read
/// and ignored.
enum ScriptedBroker {
    static func start(answering script: ByteBuffer) async throws -> any Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(Answer(script: script))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    private final class Answer: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let script: ByteBuffer
        var answered = false

        init(script: ByteBuffer) { self.script = script }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !answered else { return }
            answered = true
            context.writeAndFlush(wrapOutboundOut(script), promise: nil)
        }
    }
}
