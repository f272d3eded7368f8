import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import Logging
import NIOCore
import ServiceLifecycle
import TaskerAuth
import TaskerHTTP
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres

/// The worker's gRPC server (`worker.grpc`), a `Service` of the worker's `ServiceGroup`.
///
/// Serves `tasker.v1.WorkerHealthService`, `WorkerConfigService` and `WorkerTemplateService`, plus
/// `grpc.health.v1.Health` (when `enable_health_service`) and `grpc.reflection.v1.ServerReflection`
/// (when `enable_reflection`), over HTTP/2 at `bind_address` (a hostname is resolved once, at start), with the keepalive, maximum
/// concurrent streams and maximum frame size of `worker.grpc`, TLS when `tls_enabled` (upstream
/// ignores the key; here ``ServerTLS`` loads `tls_cert_path`, `tls_key_path` and, for mutual TLS,
/// `tls_client_ca_path`), and the connection limits of `transportConfig`. Once bound, the real `host:port` is published in `runtime.boundAddresses.grpc`.
///
/// On graceful shutdown the server stops accepting RPCs, ends open health watches and reflection
/// streams, and returns once the RPCs in flight have finished.
struct WorkerGRPCServer: Service {
    private let runtime: WorkerRuntime
    private let interceptors: [any ServerInterceptor]
    /// TLS with this material (`worker.grpc.tls_*`); nil: plaintext.
    private let tls: ServerTLS?
    private let logger: Logger

    /// - Parameters:
    ///   - runtime: the worker whose health, configuration and templates are served.
    ///   - interceptors: run on every RPC, in order (authentication, for instance).
    ///   - tls: the listener's TLS material (`ServerTLS.load` of `worker.grpc`); nil: plaintext.
    ///   - logger: the server's logger.
    package init(
        runtime: WorkerRuntime, interceptors: [any ServerInterceptor] = [], tls: ServerTLS?,
        logger: Logger = Logger(label: "tasker.grpc")
    ) {
        self.runtime = runtime
        self.interceptors = interceptors
        self.tls = tls
        self.logger = logger
    }

    /// Binds, serves until graceful shutdown, then drains the RPCs in flight.
    package func run() async throws {
        let settings = runtime.configuration.worker.grpc
        let address: GRPCNIOTransportCore.SocketAddress
        do {
            address = try BindAddress(parsing: settings.bindAddress).grpcSocketAddress()
        } catch {
            throw WorkerGRPCServerError(message: "invalid worker.grpc.bind_address '\(settings.bindAddress)': \(error)")
        }
        let shutdown = ShutdownSignal()
        let (services, names) = try Self.services(runtime: runtime, shutdown: shutdown)
        let server = GRPCServer(
            transport: .http2NIOPosix(
                address: address, transportSecurity: tls.map(Self.transportSecurity) ?? .plaintext,
                config: Self.transportConfig(settings, logger: logger)),
            services: services, interceptors: interceptors)
        let logger = self.logger
        let tls = self.tls
        let bound = runtime.boundAddresses
        // Publishes the bound address. Unstructured on purpose: when the server is stopped before it
        // ever listens (shutdown during start-up), the transport never resolves its address, and
        // waiting for it here would hold the worker's shutdown forever.
        let publisher = Task {
            guard let listening = try? await server.listeningAddress else { return }
            let published = BindAddress.describe(listening)
            bound.setGRPC(published)
            logger.info(
                "gRPC server listening",
                metadata: [
                    "address": "\(published)", "services": "\(names.joined(separator: ","))",
                    "tls": "\(tls == nil ? "off" : tls?.clientCAPEM == nil ? "on" : "mutual")",
                ])
        }
        defer { publisher.cancel() }
        try await withGracefulShutdownHandler {
            do {
                try await server.serve()
            } catch  where shutdown.isTriggered {
                // Shut down before it started serving: `serve()` refuses a stopped server. Not an error.
            }
        } onGracefulShutdown: {
            shutdown.trigger()
            server.beginGracefulShutdown()
        }
        logger.info("gRPC server stopped")
    }

    /// The services this server offers for `runtime`'s configuration, and their fully qualified
    /// names (what reflection lists). `shutdown` ends health watches and reflection streams.
    package static func services(
        runtime: WorkerRuntime, shutdown: ShutdownSignal
    ) throws
        -> (services: [any RegistrableRPCService], names: [String])
    {
        let settings = runtime.configuration.worker.grpc
        let health = WorkerHealthService(runtime: runtime, shared: runtime.healthProbes)
        var services: [any RegistrableRPCService] = [
            WorkerHealthGRPCService(health: health),
            WorkerConfigGRPCService(config: WorkerConfigQueryService(runtime: runtime)),
            WorkerTemplateGRPCService(templates: WorkerTemplateQueryService(runtime: runtime)),
        ]
        var names = [
            "tasker.v1.WorkerHealthService", "tasker.v1.WorkerConfigService", "tasker.v1.WorkerTemplateService",
        ]
        if settings.enableHealthService {
            services.append(StandardHealthService(shutdown: shutdown) { await health.readiness().isReady })
            names.append("grpc.health.v1.Health")
        }
        if settings.enableReflection {
            names.append("grpc.reflection.v1.ServerReflection")
            services.append(ServerReflectionService(index: try .generated(), services: names, shutdown: shutdown))
        }
        return (services, names)
    }

    /// The transport's TLS from the listener's material: the chain and key, and with a client CA, a
    /// client certificate required and verified against it (no hostname check). ALPN is not required,
    /// so clients that do not offer `h2` still connect.
    static func transportSecurity(_ tls: ServerTLS) -> HTTP2ServerTransport.Posix.TransportSecurity {
        .tls(
            .init(
                certificateChain: [.bytes(tls.certificateChainPEM, format: .pem)],
                privateKey: .bytes(tls.privateKeyPEM, format: .pem),
                clientCertificateVerification: tls.clientCAPEM == nil ? .noVerification : .noHostnameVerification,
                trustRoots: tls.clientCAPEM.map { .certificates([.bytes($0, format: .pem)]) } ?? .systemDefault,
                requireALPN: false))
    }

    /// HTTP/2 settings and connection limits from `worker.grpc`: keepalive, maximum concurrent
    /// streams and frame size; `idle_timeout_seconds` (GOAWAY when no RPC runs), `max_connection_age_seconds`
    /// and its grace; at most `max_connections` open connections (`ConnectionCap` on the listener; more
    /// wait in the listen backlog); `SilentConnectionCloser` on every connection, and with TLS a deadline
    /// for the handshake (`TLSHandshakeDeadlineHandler`). The transport
    /// offers its per-connection hooks as "debugging callbacks"; they are the documented place to add
    /// handlers to the listener and to each accepted connection.
    static func transportConfig(
        _ settings: WorkerConfiguration.GRPC,
        logger: Logger = Logger(label: "tasker.grpc")
    ) -> HTTP2ServerTransport.Posix.Config {
        .defaults { config in
            let keepaliveInterval = max(1, settings.keepaliveIntervalSeconds)
            let keepaliveTimeout = max(1, settings.keepaliveTimeoutSeconds)
            config.connection.keepalive.time = .seconds(keepaliveInterval)
            config.connection.keepalive.timeout = .seconds(keepaliveTimeout)
            config.connection.maxIdleTime = .seconds(max(1, settings.idleTimeoutSeconds))
            config.connection.maxAge = settings.maxConnectionAgeSeconds > 0 ? .seconds(settings.maxConnectionAgeSeconds) : nil
            config.connection.maxGraceTime = .seconds(max(1, settings.maxConnectionAgeGraceSeconds))
            config.http2.maxConcurrentStreams = settings.maxConcurrentStreams > 0 ? settings.maxConcurrentStreams : nil
            // HTTP/2 allows 2^14 ... 2^24-1 (RFC 9113 §6.5.2).
            config.http2.maxFrameSize = min(max(settings.maxFrameSize, 1 << 14), (1 << 24) - 1)
            let cap = ConnectionCap(maximum: settings.maxConnections, server: "grpc", logger: logger)
            config.channelDebuggingCallbacks.onBindTCPListener = { listener in
                // One accept per read, so the cap is exact (NIO accepts up to 4 per read by default).
                listener.setOption(ChannelOptions.maxMessagesPerRead, value: 1).flatMapThrowing {
                    try listener.pipeline.syncOperations.addHandler(cap.makeHandler())
                }
            }
            // Silent for longer than the keepalive would allow a live client — but never shorter than a
            // GOAWAY's grace (plus the ping timeout): grpc-swift stops pinging after a GOAWAY, and a
            // quiet stream (a Watch) still in its grace must not be cut.
            let grace = settings.maxConnectionAgeSeconds > 0 ? max(1, settings.maxConnectionAgeGraceSeconds) + keepaliveTimeout : 0
            let silence = TimeAmount.seconds(Int64(max(keepaliveInterval + keepaliveTimeout, grace)))
            let perAddress = ConnectionsPerAddress(maximum: settings.maxConnectionsPerAddress, server: "grpc", logger: logger)
            config.channelDebuggingCallbacks.onAcceptTCPConnection = { connection in
                connection.eventLoop.makeCompletedFuture {
                    try connection.pipeline.syncOperations.addHandler(
                        SilentConnectionCloser(limit: silence, logger: logger), position: .first)
                    try connection.pipeline.syncOperations.addHandler(perAddress.makeHandler(), position: .first)
                    // With TLS: the handshake within tls_handshake_timeout_seconds (the silence limit
                    // above counts a trickled handshake's bytes as activity).
                    try TLSHandshakeDeadlineHandler.add(
                        to: connection, timeout: .seconds(Int64(max(1, settings.tlsHandshakeTimeoutSeconds))), server: "grpc",
                        logger: logger)
                }
            }
        }
    }
}

extension BindAddress {
    /// The gRPC transport address. An IP literal is used as is; a hostname (`localhost:9191`) is
    /// resolved once with getaddrinfo (blocking, once at start-up) and its first address is bound.
    func grpcSocketAddress() throws -> GRPCNIOTransportCore.SocketAddress {
        let resolved: NIOCore.SocketAddress
        if let literal = try? NIOCore.SocketAddress(ipAddress: host, port: port) {
            resolved = literal
        } else {
            resolved = try NIOCore.SocketAddress.makeAddressResolvingHost(host, port: port)
        }
        switch resolved {
        case .v6: return .ipv6(host: resolved.ipAddress ?? host, port: port)
        default: return .ipv4(host: resolved.ipAddress ?? host, port: port)
        }
    }

    /// `host:port` (`[host]:port` for IPv6) of a bound gRPC address.
    static func describe(_ address: GRPCNIOTransportCore.SocketAddress) -> String {
        if let v4 = address.ipv4 { return "\(v4.host):\(v4.port)" }
        if let v6 = address.ipv6 { return "[\(v6.host)]:\(v6.port)" }
        return address.description
    }
}

/// The gRPC server could not start (invalid or unresolvable `worker.grpc.bind_address`).
struct WorkerGRPCServerError: Error, CustomStringConvertible, Sendable {
    package let message: String
    package var description: String { message }
}
