/// Mutations of seed inputs in the manner of libFuzzer's, from a seeded generator (SplitMix64), so
/// that a replay runs the same inputs every time: bit flips, bytes that matter to the decoders
/// (brackets, quotes, escapes, NUL, invalid UTF-8), insertions, deletions, repeated ranges (which
/// deepen nesting), truncation and splices with another seed. An input never exceeds ``maximumSize``.
struct SeededMutator {
    static let maximumSize = 256 * 1024
    static let interestingBytes: [UInt8] = Array(#"{}[]":,\"#.utf8) + [0, 0x0A, 0x7F, 0x80, 0xC0, 0xFF] + Array("-0.9e=&|*&".utf8)

    private var state: UInt64
    private let pool: [[UInt8]]

    /// A seed from a name (FNV-1a): each target gets its own sequence, the same in every run.
    static func seed(naming name: String) -> UInt64 {
        name.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }

    init(seed: UInt64, pool: [[UInt8]]) {
        state = seed
        self.pool = pool
    }

    private mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound` (`bound` > 0).
    private mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    /// One to four mutations of `input`, stacked.
    mutating func mutate(_ input: [UInt8]) -> [UInt8] {
        var bytes = input
        for _ in 0...below(4) { mutateOnce(&bytes) }
        if bytes.count > Self.maximumSize { bytes.removeLast(bytes.count - Self.maximumSize) }
        return bytes
    }

    private mutating func mutateOnce(_ bytes: inout [UInt8]) {
        guard !bytes.isEmpty else {
            bytes = [Self.interestingBytes[below(Self.interestingBytes.count)]]
            return
        }
        let at = below(bytes.count)
        switch below(7) {
        case 0:
            bytes[at] ^= 1 << UInt8(below(8))
        case 1:
            bytes[at] = Self.interestingBytes[below(Self.interestingBytes.count)]
        case 2:
            bytes.insert(contentsOf: (0...below(8)).map { _ in UInt8(truncatingIfNeeded: next()) }, at: at)
        case 3:
            bytes.removeSubrange(at..<min(bytes.count, at + 1 + below(16)))
        case 4:
            let range = at..<min(bytes.count, at + 1 + below(8))
            let copies = Array(repeating: Array(bytes[range]), count: 1 + below(64)).flatMap { $0 }
            bytes.insert(contentsOf: copies.prefix(Self.maximumSize - min(bytes.count, Self.maximumSize)), at: at)
        case 5:
            bytes.removeLast(bytes.count - at)
        default:
            let other = pool[below(pool.count)]
            bytes = Array(bytes[..<at]) + other[below(max(other.count, 1)) % max(other.count, 1)..<other.count]
        }
    }
}
