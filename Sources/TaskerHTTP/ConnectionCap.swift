import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import TaskerPostgres

/// At most `maximum` open connections on a server (`worker.web.max_connections`,
/// `worker.grpc.max_connections`, `orchestration.web.max_connections`).
///
/// A Hummingbird `AvailableConnectionsDelegate`: its `AvailableConnectionsChannelHandler` on the
/// listening channel stops accepting while `maximum` connections are open, so further clients wait
/// in the kernel's listen backlog (they hold no file descriptor of the worker) and are accepted as
/// soon as one closes; open connections are not affected. Used by both servers (the gRPC transport
/// installs the same handler on its listener, accepting one connection per read, so its cap is
/// exact). Hummingbird's listener accepts up to 4 connections per read (NIO's `maxMessagesPerRead`)
/// and offers no way to change it, so in a burst the REST server can exceed its cap by up to 3.
///
/// Logs a warning when the cap is reached (at most every 10 s).
package struct ConnectionCap: AvailableConnectionsDelegate {
    package let maximum: Int
    let server: String
    let logger: Logger
    private var open = 0
    private let warningLog = Throttle(interval: .seconds(10))

    package init(maximum: Int, server: String, logger: Logger) {
        self.maximum = max(1, maximum)
        self.server = server
        self.logger = logger
    }

    package mutating func connectionOpened() {
        open += 1
        if open == maximum, warningLog.allow() {
            logger.warning(
                "connection limit reached: new connections wait until one closes",
                metadata: [
                    "server": "\(server)", "max_connections": "\(maximum)",
                ])
        }
    }

    package mutating func connectionClosed() {
        open -= 1
    }

    package func isAcceptingNewConnections() -> Bool {
        open < maximum
    }

    /// The listening channel's handler enforcing this cap.
    package func makeHandler() -> AvailableConnectionsChannelHandler<ConnectionCap> {
        AvailableConnectionsChannelHandler(delegate: self)
    }
}
