import Logging
import NIOCore
import Synchronization
import TaskerPostgres

/// At most `maximum` open connections from one client IP address on a server
/// (`worker.web.max_connections_per_address`, `worker.grpc.max_connections_per_address`, `orchestration.web.max_connections_per_address`; 0 = no
/// limit). `ConnectionCap` bounds the total, which one client could otherwise fill alone (a
/// slowloris from one host would then keep every probe out until its connections time out); with
/// this limit one address takes at most its share and other clients (the kubelet, Prometheus) still
/// get in. A connection over the limit is closed as soon as it is accepted. Logs at most every 10 s.
package final class ConnectionsPerAddress: Sendable {
    package let maximum: Int
    private let server: String
    private let logger: Logger
    private let open = Mutex<[String: Int]>([:])
    private let refusalLog = Throttle(interval: .seconds(10))

    package init(maximum: Int, server: String, logger: Logger) {
        self.maximum = maximum
        self.server = server
        self.logger = logger
    }

    /// Open connections from `address` now.
    package func count(_ address: String) -> Int { open.withLock { $0[address, default: 0] } }

    /// Takes a place for a connection from `address`; false when the address has `maximum` already.
    package func admit(_ address: String) -> Bool {
        guard maximum > 0 else { return true }
        let admitted = open.withLock { counts in
            guard counts[address, default: 0] < maximum else { return false }
            counts[address, default: 0] += 1
            return true
        }
        if !admitted, refusalLog.allow() {
            logger.warning(
                "connection limit per client address reached: closing new connections from it",
                metadata: [
                    "server": "\(server)", "client": "\(address)", "max_connections_per_address": "\(maximum)",
                ])
        }
        return admitted
    }

    /// Gives back the place of a connection from `address`.
    package func release(_ address: String) {
        open.withLock { counts in
            let left = counts[address, default: 0] - 1
            counts[address] = left > 0 ? left : nil
        }
    }

    /// The handler of one accepted connection (added to its pipeline).
    package func makeHandler() -> Handler { Handler(limit: self) }

    /// Admits its connection when it becomes active (or at once when added to an active one);
    /// closes it when its address is over the limit; gives its place back when it closes.
    package final class Handler: ChannelInboundHandler, RemovableChannelHandler {
        package typealias InboundIn = NIOAny
        private let limit: ConnectionsPerAddress
        private var admitted: String?

        init(limit: ConnectionsPerAddress) { self.limit = limit }

        package func handlerAdded(context: ChannelHandlerContext) {
            if context.channel.isActive { admit(context) }
        }

        package func channelActive(context: ChannelHandlerContext) {
            if admitted == nil { admit(context) }
            context.fireChannelActive()
        }

        package func channelInactive(context: ChannelHandlerContext) {
            if let address = admitted {
                admitted = nil
                limit.release(address)
            }
            context.fireChannelInactive()
        }

        private func admit(_ context: ChannelHandlerContext) {
            guard limit.maximum > 0, let address = context.channel.remoteAddress?.ipAddress else { return }
            if limit.admit(address) {
                admitted = address
            } else {
                context.close(promise: nil)
            }
        }
    }
}
