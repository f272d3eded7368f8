#if DEBUG
import NIOCore

@testable import TaskerAMQP

/// Bytes from the broker (or whoever answers on its port), in arbitrary fragments → `FrameDecoder` →
/// the content assembly of each channel, as `AMQPConnection` reads them. The first input byte seeds
/// the fragment sizes and picks the frame limit. Contract: fragmenting changes nothing (same frames,
/// same error); each frame re-encodes (`FrameEncoder`) to bytes that decode to a frame encoding to the
/// same bytes; the assembler holds no more body than arrived and delivers no body over its limit.
public enum AMQPFramesCheck {
    static let maximumBodySize: UInt64 = 2048

    struct Decoded: Equatable {
        var frames: [AMQPFrame] = []
        var error: String?
    }

    /// Checks one input against the contract above.
    public static func check(_ input: [UInt8]) {
        guard let seed = input.first else { return }
        let stream = Array(input.dropFirst())
        let frameMax: UInt32 = seed & 1 == 0 ? AMQPFrame.minimumFrameMax : 0
        let whole = decode([stream], frameMax: frameMax)
        let pieces = decode(fragments(of: stream, seed: seed), frameMax: frameMax)
        FuzzContract.require(whole == pieces, "fragmented: \(pieces) whole: \(whole)")
        for frame in whole.frames { checkReencoding(frame, frameMax: frameMax) }
        assemble(whole.frames, received: stream.count)
    }

    /// Fragment sizes 1…64 from a little generator seeded by `seed`.
    static func fragments(of bytes: [UInt8], seed: UInt8) -> [[UInt8]] {
        var state = UInt32(seed) &* 2_654_435_761 | 1
        var parts: [[UInt8]] = []
        var start = 0
        while start < bytes.count {
            state = state &* 1_103_515_245 &+ 12_345
            let length = min(Int((state >> 16) % 64) + 1, bytes.count - start)
            parts.append(Array(bytes[start..<(start + length)]))
            start += length
        }
        return parts
    }

    static func decode(_ parts: [[UInt8]], frameMax: UInt32) -> Decoded {
        var decoder = FrameDecoder(maximumFrameSize: frameMax)
        var decoded = Decoded()
        for part in parts {
            decoder.append(ByteBuffer(bytes: part))
            do {
                while let frame = try decoder.next() { decoded.frames.append(frame) }
            } catch {
                decoded.error = "\(error)"
                return decoded
            }
        }
        return decoded
    }

    static func encoded(_ frame: AMQPFrame) -> [UInt8]? {
        var buffer = ByteBuffer()
        do {
            try FrameEncoder.encode(frame, into: &buffer)
        } catch {
            return nil
        }
        return Array(buffer.readableBytesView)
    }

    static func checkReencoding(_ frame: AMQPFrame, frameMax: UInt32) {
        guard let first = encoded(frame) else {
            FuzzContract.require(false, "a decoded frame does not encode: \(frame)")
            return
        }
        var decoder = FrameDecoder(maximumFrameSize: 0)
        decoder.append(ByteBuffer(bytes: first))
        let again: AMQPFrame?
        do {
            again = try decoder.next()
        } catch {
            FuzzContract.require(false, "the re-encoded \(frame) does not decode: \(error)")
            return
        }
        guard let again else {
            FuzzContract.require(false, "the re-encoded \(frame) is incomplete")
            return
        }
        FuzzContract.require(encoded(again) == first, "\(frame) re-encodes unstably as \(again)")
        FuzzContract.require(decoder.bufferedBytes == 0, "\(frame) re-encodes with trailing bytes")
    }

    /// The content assembly of `AMQPConnection` (every channel open).
    static func assemble(_ frames: [AMQPFrame], received: Int) {
        var assemblers: [UInt16: ContentAssembler] = [:]
        for frame in frames {
            let channel = frame.channel
            var assembler = assemblers[channel] ?? ContentAssembler(channel: channel, maximumBodySize: maximumBodySize)
            defer { assemblers[channel] = assembler }
            let message: ContentAssembler.Message?
            do {
                switch frame {
                case .method(_, let method) where method.carriesContent:
                    try assembler.start(method)
                    message = nil
                case .header(_, let header): message = try assembler.header(header)
                case .body(_, let body): message = try assembler.body(body)
                case .method, .heartbeat: message = nil
                }
            } catch {
                return
            }
            FuzzContract.require(
                assembler.bodyCapacity <= max(1024, 4 * received), "\(assembler.bodyCapacity) bytes held for \(received) received")
            if let message {
                FuzzContract.require(UInt64(message.body.readableBytes) <= maximumBodySize, "a body over the limit delivered")
                FuzzContract.require(message.body.readableBytes <= received, "a body larger than the input")
            }
        }
    }
}
#endif
