import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy in front of the test PostgreSQL that can lose an answer, as a network or a server
/// breaking at the wrong moment does: once armed with a byte pattern (a prepared statement's name),
/// the next connection whose request contains it has the server's whole reply discarded and is
/// closed. The server got the request in full and ran it (a pipeline's `COMMIT` included: libpq's
/// pipelines get their replies at the `Sync`, after every statement); the client only sees the
/// connection break.
///
/// `blackHole()` makes the database unreachable the way a dead host or a dropped route does: every
/// connection stays open, but nothing is forwarded or answered any more, and new connections are
/// accepted and never answered.
///
/// `refuseConnections()` cuts the server off the way a restarted host does: every forwarded
/// connection breaks and new ones are closed at once, until `acceptConnections()`. It serves any TCP
/// server (the broker as well: `databaseURL` may be an `amqp://` URL).
///
/// Blocking sockets on threads of its own (test code; nothing here runs on the cooperative pool).
public final class AnswerLosingProxy: Sendable {
    /// The URL to give the client: the database's URL with the proxy's address.
    public let url: String
    private let listener: Int32
    private let upstreamPort: UInt16
    private struct State {
        var pattern: [UInt8]?
        var sockets: Set<Int32> = []
        var answersLost = 0
        var closed = false
        var blackHoled = false
        var refusing = false
    }
    private let state = Mutex(State())

    /// Listens on 127.0.0.1 (a free port) and forwards to the host and port of `databaseURL`.
    public init(databaseURL: String) throws {
        guard var components = URLComponents(string: databaseURL), let port = components.port else {
            throw TestSetupError("cannot read a host and port in \(databaseURL)")
        }
        upstreamPort = UInt16(port)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                bind(fd, sa, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, sa, &length) == 0
            }
        }
        guard fd >= 0, bound else { throw TestSetupError("the proxy cannot listen: errno \(errno)") }
        listener = fd
        components.host = "127.0.0.1"
        components.port = Int(UInt16(bigEndian: address.sin_port))
        url = components.string ?? databaseURL
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Arms the proxy: the next request containing `pattern` gets no answer, and its connection breaks.
    public func loseNextAnswer(toRequestContaining pattern: String) {
        precondition(!pattern.isEmpty, "an empty pattern matches every request")
        state.withLock { $0.pattern = Array(pattern.utf8) }
    }

    /// How many answers were lost so far.
    public var answersLost: Int { state.withLock { $0.answersLost } }

    /// Whether an armed pattern is still waiting for its request.
    public var isArmed: Bool { state.withLock { $0.pattern != nil } }

    /// From now on nothing passes in either direction and new connections get no answer; no
    /// socket is closed (a client notices only by its own timeouts).
    public func blackHole() {
        state.withLock { $0.blackHoled = true }
    }

    private var isBlackHoled: Bool { state.withLock { $0.blackHoled } }

    /// Breaks every forwarded connection; new connections are closed as soon as they are accepted,
    /// until `acceptConnections()`.
    public func refuseConnections() {
        state.withLock { state in
            state.refusing = true
            for fd in state.sockets { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// Forwards new connections again after `refuseConnections()`.
    public func acceptConnections() {
        state.withLock { $0.refusing = false }
    }

    /// Stops listening and breaks every forwarded connection.
    public func close() {
        state.withLock { state in
            state.closed = true
            for fd in state.sockets { shutdown(fd, Int32(SHUT_RDWR)) }
        }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit { Glibc.close(listener) }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                return
            }
            if state.withLock({ $0.refusing }) {
                Glibc.close(client)
                continue
            }
            if isBlackHoled {
                // Accepted, read and never answered (closed only with the proxy).
                state.withLock { _ = $0.sockets.insert(client) }
                Thread.detachNewThread {
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    while read(client, &buffer, buffer.count) > 0 {}
                }
                continue
            }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: upstreamPort)
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            let open = state.withLock { state in
                guard !state.closed, !state.refusing else { return false }
                state.sockets.formUnion([client, upstream])
                return true
            }
            guard connected, open else {
                Glibc.close(client)
                Glibc.close(upstream)
                continue
            }
            let link = Link(client: client, upstream: upstream)
            Thread.detachNewThread { [self] in forwardRequests(link) }
            Thread.detachNewThread { [self] in forwardAnswers(link) }
        }
    }

    /// One proxied connection; `losing` is set when its answer is to be lost.
    private final class Link: Sendable {
        let client: Int32
        let upstream: Int32
        let losing = Atomic<Bool>(false)
        let finished = Atomic<Int>(0)
        init(client: Int32, upstream: Int32) {
            self.client = client
            self.upstream = upstream
        }
    }

    private func forwardRequests(_ link: Link) {
        var tail: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(link.client, &buffer, buffer.count)
            guard count > 0 else { break }
            let chunk = Array(buffer[0..<count])
            let armed = state.withLock { state -> Bool in
                // Only bytes not searched before (plus a pattern's length of the previous chunk, for
                // a pattern cut in two): a pattern forwarded before arming never arms it.
                guard let pattern = state.pattern, Self.contains(tail.suffix(pattern.count - 1) + chunk, pattern)
                else { return false }
                state.pattern = nil
                return true
            }
            if armed { link.losing.store(true, ordering: .sequentiallyConsistent) }
            if isBlackHoled { continue }
            tail = Array((tail + chunk).suffix(256))
            guard Self.writeAll(link.upstream, chunk) else { break }
        }
        shutdown(link.upstream, Int32(SHUT_WR))
        finish(link)
    }

    private func forwardAnswers(_ link: Link) {
        var dropping = false
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(link.upstream, &buffer, buffer.count)
            guard count > 0 else { break }
            if isBlackHoled { continue }
            if link.losing.load(ordering: .sequentiallyConsistent) {
                // The server is answering: the client never hears of it. Only the client's side is
                // closed; the rest of the reply is read and dropped, so the server finishes the
                // request (an early part of a long reply may come before its COMMIT).
                if !dropping {
                    dropping = true
                    state.withLock { $0.answersLost += 1 }
                    shutdown(link.client, Int32(SHUT_RDWR))
                }
                continue
            }
            guard Self.writeAll(link.client, Array(buffer[0..<count])) else { break }
        }
        // Black-holed, the client is not told that the server went away (a dead route tells nobody).
        if !isBlackHoled { shutdown(link.client, Int32(SHUT_WR)) }
        finish(link)
    }

    /// The second pump to stop closes both sockets.
    private func finish(_ link: Link) {
        guard link.finished.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue == 2 else { return }
        state.withLock { state in
            state.sockets.subtract([link.client, link.upstream])
            Glibc.close(link.client)
            Glibc.close(link.upstream)
        }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
