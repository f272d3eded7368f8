import Foundation
import GRPCCore
import ServiceLifecycle
import Synchronization
import TaskerAuth
import TaskerHTTP

/// The operator surface run next to the pipeline in the worker's `ServiceGroup`: the REST server
/// (`worker.web`) and the gRPC server (`worker.grpc`), each only when enabled. They come first in
/// the group, so they shut down last and keep answering health probes while the pipeline drains.
///
/// Both share one `WorkerAuthenticator` (`worker.web.auth`): REST guards the template and config
/// routes with `RequirePermissionMiddleware`, gRPC the config and template services with
/// `GRPCAuthInterceptor`; health, metrics, API docs, `grpc.health.v1` and reflection stay open.
///
/// TLS: each enabled server's `tls_*` files are read and checked by ``loadTLS(_:)``, which the
/// daemon calls before anything else at boot, so a missing file or a key that does not match its
/// certificate stops the boot with the key named.
enum OperatorServices {
    /// The TLS material of the enabled servers (nil: plaintext, or the server is off).
    struct TLS: Sendable {
        var web: ServerTLS?
        var grpc: ServerTLS?
    }

    static func loadTLS(_ worker: WorkerConfiguration) throws(ServerTLSError) -> TLS {
        TLS(
            web: worker.web.enabled ? try ServerTLS.load(worker.web, section: "worker.web") : nil,
            grpc: worker.grpc.enabled ? try ServerTLS.load(worker.grpc, section: "worker.grpc") : nil)
    }

    static func make(runtime: WorkerRuntime, authenticator: WorkerAuthenticator, tls: TLS) -> [any Service] {
        var services: [any Service] = []
        let web = runtime.configuration.worker.web
        let grpc = runtime.configuration.worker.grpc
        if web.enabled {
            let guardRoutes: WebAuthorizer = { permission in
                RequirePermissionMiddleware<WorkerRequestContext>(authenticator: authenticator, permission: permission)
            }
            services.append(
                WorkerWebServer(runtime: runtime, authorizer: authenticator.isEnabled ? guardRoutes : nil, tls: tls.web))
        }
        if grpc.enabled {
            let interceptors: [any ServerInterceptor] =
                authenticator.isEnabled
                ? [GRPCAuthInterceptor(authenticator: authenticator)] : []
            services.append(WorkerGRPCServer(runtime: runtime, interceptors: interceptors, tls: tls.grpc))
        }
        return services
    }
}

/// The addresses the operator servers bound, published once they listen (tests bind port 0).
public final class BoundAddresses: Sendable {
    private let storage = Mutex<(web: String?, grpc: String?)>((nil, nil))

    package init() {}

    /// `host:port` of the REST server once it listens.
    public var web: String? { storage.withLock { $0.web } }
    /// `host:port` of the gRPC server once it listens.
    public var grpc: String? { storage.withLock { $0.grpc } }

    func setWeb(_ address: String) { storage.withLock { $0.web = address } }
    func setGRPC(_ address: String) { storage.withLock { $0.grpc = address } }
}
