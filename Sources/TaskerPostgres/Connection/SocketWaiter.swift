import CLibPQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Waits for a libpq socket to become readable or writable, or for a wake-up from another thread.
///
/// libpq's own waits cannot be interrupted, so connecting and waiting for notifications use
/// `poll(2)` on `PQsocket` plus the read end of a pipe: `wake()` writes a byte to the pipe, which
/// ends a wait at once (for cancellation and shutdown). Nothing here sleeps and retries.
///
/// Creating a waiter takes two file descriptors; when the process has none left (`EMFILE`) the
/// initializer throws instead of aborting, and the connect attempt that needed it fails.
final class SocketWaiter: Sendable {
    enum Interest { case read, write }
    enum Outcome { case ready, woken, timedOut }

    // Immutable file descriptors; `write(2)`/`read(2)` on a pipe are thread-safe.
    private let wakeReadFD: Int32
    private let wakeWriteFD: Int32

    /// Throws `SystemResourceError(.wakePipe, …)` when `pipe(2)` fails (out of file descriptors).
    init() throws(SystemResourceError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw SystemResourceError(.wakePipe, errno: errno) }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeReadFD = fds[0]
        wakeWriteFD = fds[1]
    }

    deinit {
        close(wakeReadFD)
        close(wakeWriteFD)
    }

    /// True when `socket` has something to read, or is closed or in error, right now (no wait).
    /// Any thread: poll(2) only looks at the descriptor.
    static func hasInput(socket: Int32) -> Bool {
        guard socket >= 0 else { return true }
        var fd = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&fd, 1, 0) != 0
    }

    /// Blocks the calling (dedicated) thread until the peer closes `socket` (EOF or an error) or the
    /// deadline passes; whatever arrives meanwhile is read and dropped. Closes `socket` (a duplicate
    /// the caller made for this).
    static func waitForPeerClose(socket: Int32, deadline: ContinuousClock.Instant) {
        defer { close(socket) }
        var buffer = [UInt8](repeating: 0, count: 512)
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return }
            var fd = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let rc = poll(&fd, 1, Int32(clamping: max(1, remaining.inMilliseconds)))
            if rc < 0 && errno == EINTR { continue }
            guard rc > 0 else { return }
            let count = read(socket, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return }
        }
    }

    /// Ends the current (or the next) wait with `.woken`. Safe from any thread.
    func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWriteFD, &byte, 1)
    }

    /// Blocks the calling (dedicated) thread until `socket` is ready, `wake()` is called, or the
    /// deadline passes. `nil` waits without a time limit.
    func wait(socket: Int32, for interest: Interest, deadline: ContinuousClock.Instant?) -> Outcome {
        while true {
            var timeoutMs: Int32 = -1
            if let deadline {
                let remaining = ContinuousClock.now.duration(to: deadline)
                if remaining <= .zero { return .timedOut }
                timeoutMs = Int32(clamping: max(1, remaining.inMilliseconds))
            }
            let events = Int16(interest == .read ? POLLIN : POLLOUT)
            var fds = [
                pollfd(fd: socket, events: events, revents: 0),
                pollfd(fd: wakeReadFD, events: Int16(POLLIN), revents: 0),
            ]
            let rc = poll(&fds, 2, timeoutMs)
            if rc < 0 {
                if errno == EINTR { continue }
                return .ready  // let libpq report the socket error
            }
            if rc == 0 { return .timedOut }
            if fds[1].revents != 0 {
                drainWakeups()
                return .woken
            }
            return .ready
        }
    }

    private func drainWakeups() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wakeReadFD, &buffer, buffer.count) > 0 {}
    }
}
