import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import TaskerModel

/// What every REST server of ours shares (the worker's `worker.web`, the orchestration's
/// `orchestration.web`): the bind address parsed, refused with the key that holds it; the
/// connection limits (`HTTPConnectionLimits`: HTTP/1 with the per-address limit and the head and
/// idle timeouts, the cap on open connections); and, once listening, the address really bound
/// (`host:port`, `[v6]:port`; port 0 picks a free one) handed to `onListening` and logged as "REST
/// server listening"; and TLS when the table's `tls_enabled` is set (``ServerTLS``: HTTPS only, mutual
/// TLS with `tls_client_ca_path`). Each server keeps its own routes, middleware and what it does with
/// the address.
package struct RESTServerSetup: Sendable {
    /// `host:port` from the configuration.
    package var bindAddress: String
    /// The configuration key of `bindAddress`, named when it does not parse (`worker.web.bind_address`).
    var bindAddressKey: String { section + ".bind_address" }
    /// The configuration table (`worker.web`).
    var section: String
    package var limits: HTTPConnectionLimits
    /// Names the server in the limits' log lines (`rest`, `orchestration-rest`).
    package var serverName: String
    /// The TLS material of the table's `tls_*` keys (``ServerTLS/load(_:section:)``); nil: plaintext.
    package var tls: ServerTLS?

    /// The set-up of `settings` (a `[worker.web]` or `[orchestration.web]` table); `section` names the
    /// table in errors (`worker.web`), `serverName` the server in the limits' log lines; `tls` is the
    /// material its `tls_*` keys name, loaded by the caller before it starts anything.
    package init(_ settings: some RESTServerSettings, section: String, serverName: String, tls: ServerTLS?) {
        bindAddress = settings.bindAddress
        self.section = section
        limits = HTTPConnectionLimits(
            maxConnections: settings.maxConnections, maxConnectionsPerAddress: settings.maxConnectionsPerAddress,
            headerReadTimeoutSeconds: settings.headerReadTimeoutSeconds, idleTimeoutSeconds: settings.idleTimeoutSeconds)
        self.serverName = serverName
        self.tls = tls
    }

    /// The application serving `responder`; throws when the bind address does not parse.
    package func application<Responder: HTTPResponder>(
        responder: Responder, logger: Logger, listeningMetadata: Logger.Metadata = [:],
        onListening: @escaping @Sendable (String) -> Void
    ) throws(RESTServerError) -> Application<Responder> {
        let address: TaskerModel.BindAddress
        do {
            address = try TaskerModel.BindAddress(parsing: bindAddress)
        } catch {
            throw RESTServerError(description: "\(bindAddressKey) must be host:port, got \"\(bindAddress)\"")
        }
        var server = limits.http1(server: serverName, logger: logger)
        if let tls {
            do {
                server = try .tls(server, tlsConfiguration: tls.configuration)
            } catch {
                throw RESTServerError(description: "\(section): the TLS context cannot be made: \(error)")
            }
        }
        let scheme = tls == nil ? "http" : "https"
        return Application(
            responder: responder,
            server: server,
            configuration: ApplicationConfiguration(
                address: .hostname(address.host, port: address.port), serverName: nil,
                availableConnectionsDelegate: limits.connectionCap(server: serverName, logger: logger)),
            onServerRunning: { [bindAddress] channel in
                let bound = Self.describe(channel.localAddress) ?? bindAddress
                onListening(bound)
                logger.info(
                    "REST server listening",
                    metadata: listeningMetadata.merging(["address": "\(bound)", "scheme": "\(scheme)"]) { $1 })
            },
            logger: logger)
    }

    /// `host:port` (`[host]:port` for IPv6) of a bound socket address.
    package static func describe(_ address: SocketAddress?) -> String? {
        guard let address, let ip = address.ipAddress, let port = address.port else { return nil }
        if case .v6 = address { return "[\(ip)]:\(port)" }
        return "\(ip):\(port)"
    }
}

/// The keys a REST server's configuration table has in common (`[worker.web]`, `[orchestration.web]`).
package protocol RESTServerSettings {
    var bindAddress: String { get }
    var maxConnections: Int { get }
    var maxConnectionsPerAddress: Int { get }
    var headerReadTimeoutSeconds: Int { get }
    var idleTimeoutSeconds: Int { get }
}

extension WorkerConfiguration.Web: RESTServerSettings {}
extension OrchestrationConfiguration.Web: RESTServerSettings {}

/// A REST server could not start: its configuration names no address it can bind.
public struct RESTServerError: Error, CustomStringConvertible, Sendable {
    public let description: String
}
