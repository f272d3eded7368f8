import GRPCCore
import TaskerAuth

/// grpc-swift-2 server interceptor applying ``WorkerAuthenticator`` to the protected worker RPCs.
///
/// Credentials come from the metadata `authorization` (`Bearer <token>`, scheme in any case, tried first) or the API key header
/// (`api_key_header` lowercased, default `x-api-key`). Failures, as upstream:
/// `UNAUTHENTICATED` "Invalid or expired credentials" (missing, malformed or invalid credentials) and
/// `PERMISSION_DENIED` "Insufficient permissions for this operation". Methods with no requirement
/// (`WorkerHealthService`, `grpc.health.v1.Health`, reflection, anything not listed) pass untouched.
struct GRPCAuthInterceptor: ServerInterceptor {
    /// The upstream requirements: `WorkerConfigService/GetConfig` → `worker:config_read`, every method of
    /// `WorkerTemplateService` → `worker:templates_read`.
    static let defaultRequirements: [String: WorkerPermission] = [
        "tasker.v1.WorkerConfigService/GetConfig": .configRead,
        "tasker.v1.WorkerTemplateService/*": .templatesRead,
    ]

    /// The `UNAUTHENTICATED` message.
    static let unauthenticatedMessage = "Invalid or expired credentials"
    /// The `PERMISSION_DENIED` message.
    static let permissionDeniedMessage = "Insufficient permissions for this operation"

    private let authenticator: WorkerAuthenticator
    private let requirements: [String: WorkerPermission]
    private let apiKeyMetadataKey: String

    /// Creates the interceptor.
    ///
    /// - Parameters:
    ///   - authenticator: The shared authenticator.
    ///   - requirements: Required permission by fully qualified method (`package.Service/Method`), or by
    ///     service with `package.Service/*` (an exact method entry wins over its service's `*`).
    package init(
        authenticator: WorkerAuthenticator,
        requirements: [String: WorkerPermission] = GRPCAuthInterceptor.defaultRequirements
    ) {
        self.authenticator = authenticator
        self.requirements = requirements
        self.apiKeyMetadataKey = authenticator.apiKeyHeader.lowercased()
    }

    /// Creates the interceptor from method descriptors (e.g. the generated `Method.X.descriptor`s).
    package init(authenticator: WorkerAuthenticator, methodRequirements: [MethodDescriptor: WorkerPermission]) {
        var requirements: [String: WorkerPermission] = [:]
        for (method, permission) in methodRequirements { requirements[method.fullyQualifiedMethod] = permission }
        self.init(authenticator: authenticator, requirements: requirements)
    }

    /// The permission `method` requires, or nil if it is open.
    func requiredPermission(for method: MethodDescriptor) -> WorkerPermission? {
        requirements[method.fullyQualifiedMethod] ?? requirements["\(method.service.fullyQualifiedService)/*"]
    }

    /// Authenticates and authorizes protected methods; answers with an error response when refused.
    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>,
        context: ServerContext,
        next: @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        guard let permission = requiredPermission(for: context.descriptor) else {
            return try await next(request, context)
        }
        let credentials = AuthCredentials(
            authorizationBytes: Self.firstValue(for: "authorization", in: request.metadata),
            apiKeyBytes: Self.firstValue(for: apiKeyMetadataKey, in: request.metadata))
        switch await authenticator.authorize(credentials, for: permission) {
        case .success:
            return try await next(request, context)
        case .failure(let failure):
            return StreamingServerResponse(of: Output.self, error: Self.rpcError(for: failure))
        }
    }

    /// The gRPC status for a failure: `PERMISSION_DENIED` for `forbidden`, else `UNAUTHENTICATED`.
    static func rpcError(for failure: AuthFailure) -> RPCError {
        failure.isForbidden
            ? RPCError(code: .permissionDenied, message: permissionDeniedMessage)
            : RPCError(code: .unauthenticated, message: unauthenticatedMessage)
    }

    /// The first string value for `key` as bytes (non-ASCII values then fail as `malformed`).
    /// Binary values need `-bin` keys, which the two credential keys never are.
    static func firstValue(for key: String, in metadata: Metadata) -> [UInt8]? {
        var values = metadata[stringValues: key].makeIterator()
        return values.next().map { Array($0.utf8) }
    }
}
