import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// The connection limits of an HTTP/1 REST server (the worker's `worker.web`, the orchestration's
/// `orchestration.web`): at most `maxConnections` open connections (``ConnectionCap`` on the listener;
/// more wait in the listen backlog), at most `maxConnectionsPerAddress` from one client IP
/// (``ConnectionsPerAddress``; 0 = no limit), a request head within `headerReadTimeoutSeconds`
/// (``RequestHeadTimeoutHandler``, against slowloris clients) and a connection without a request in
/// progress closed after `idleTimeoutSeconds`.
package struct HTTPConnectionLimits: Sendable, Equatable {
    package var maxConnections: Int
    package var maxConnectionsPerAddress: Int
    package var headerReadTimeoutSeconds: Int
    package var idleTimeoutSeconds: Int

    package init(maxConnections: Int, maxConnectionsPerAddress: Int, headerReadTimeoutSeconds: Int, idleTimeoutSeconds: Int) {
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.headerReadTimeoutSeconds = headerReadTimeoutSeconds
        self.idleTimeoutSeconds = idleTimeoutSeconds
    }

    /// HTTP/1 with the per-address limit, the head timeout and the idle timeout.
    func http1(server: String, logger: Logger) -> HTTPServerBuilder {
        let headerTimeout = TimeAmount.seconds(Int64(max(1, headerReadTimeoutSeconds)))
        let perAddress = ConnectionsPerAddress(maximum: maxConnectionsPerAddress, server: server, logger: logger)
        return .http1(
            configuration: HTTP1Channel.Configuration(
                additionalChannelHandlers: [perAddress.makeHandler(), RequestHeadTimeoutHandler(timeout: headerTimeout, logger: logger)],
                idleTimeout: .seconds(Int64(max(1, idleTimeoutSeconds)))))
    }

    /// The listener's cap on open connections (`ApplicationConfiguration.availableConnectionsDelegate`).
    func connectionCap(server: String, logger: Logger) -> ConnectionCap {
        ConnectionCap(maximum: maxConnections, server: server, logger: logger)
    }
}
