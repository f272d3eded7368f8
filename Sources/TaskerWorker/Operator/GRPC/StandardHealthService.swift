import Foundation
import GRPCCore
import GRPCProtobuf
import Synchronization
import TaskerPostgres

/// `grpc.health.v1.Health` for the worker: `""` (the whole server) and the three `tasker.v1` worker
/// services report SERVING while the worker is ready (the same verdict as `/health/ready` and
/// `CheckReadiness`) and NOT_SERVING otherwise.
///
/// `Check` on any other name fails with NOT_FOUND. `Watch` sends the current status at once, then
/// re-evaluates every `pollInterval` and sends only when the status changed; for an unknown name it
/// fails with NOT_FOUND as upstream's (tonic-health) does. A watch ends when the client cancels it
/// or when the server shuts down (`shutdown` is triggered).
struct StandardHealthService: Grpc_Health_V1_Health.SimpleServiceProtocol {
    /// The names with a status: the server as a whole and the worker's own services.
    static let serviceNames: [String] = [
        "",
        "tasker.v1.WorkerHealthService",
        "tasker.v1.WorkerConfigService",
        "tasker.v1.WorkerTemplateService",
    ]

    private typealias Status = Grpc_Health_V1_HealthCheckResponse.ServingStatus

    private let isReady: @Sendable () async -> Bool
    private let pollInterval: Duration
    private let shutdown: ShutdownSignal

    /// - Parameters:
    ///   - pollInterval: how often a `Watch` re-evaluates readiness.
    ///   - shutdown: triggered when the server begins shutting down; ends every open `Watch`.
    ///   - isReady: the worker's readiness verdict (the worker's is shared with every other probe
    ///     and evaluated at most once a second: `HealthProbeCache`).
    package init(
        pollInterval: Duration = .seconds(1), shutdown: ShutdownSignal,
        isReady: @escaping @Sendable () async -> Bool
    ) {
        self.isReady = isReady
        self.pollInterval = pollInterval
        self.shutdown = shutdown
    }

    /// The current status of `request.service`; NOT_FOUND when it has none.
    package func check(
        request: Grpc_Health_V1_HealthCheckRequest,
        context: ServerContext
    ) async throws -> Grpc_Health_V1_HealthCheckResponse {
        guard Self.serviceNames.contains(request.service) else {
            throw RPCError(code: .notFound, message: "unknown service: \(request.service)")
        }
        return Self.response(await currentStatus())
    }

    /// The current status, then each change, until the RPC is cancelled or the server shuts down.
    func watch(
        request: Grpc_Health_V1_HealthCheckRequest,
        response: RPCWriter<Grpc_Health_V1_HealthCheckResponse>,
        context: ServerContext
    ) async throws {
        guard Self.serviceNames.contains(request.service) else {
            throw RPCError(code: .notFound, message: "unknown service: \(request.service)")
        }
        try await shutdown.run(until: context) {
            try await self.stream(to: response)
        }
        // As other gRPC servers do: watchers learn that the server is going away.
        if shutdown.isTriggered {
            try? await response.write(Self.response(.notServing))
        }
    }

    private func stream(to response: RPCWriter<Grpc_Health_V1_HealthCheckResponse>) async throws {
        var last: Status?
        while !Task.isCancelled {
            let status = await currentStatus()
            if status != last {
                try await response.write(Self.response(status))
                last = status
            }
            try await Task.sleep(for: pollInterval)
        }
    }

    private func currentStatus() async -> Status {
        await isReady() ? .serving : .notServing
    }

    private static func response(_ status: Status) -> Grpc_Health_V1_HealthCheckResponse {
        var response = Grpc_Health_V1_HealthCheckResponse()
        response.status = status
        return response
    }
}

/// The gRPC services' shutdown signal: triggered when the server begins its graceful shutdown.
typealias ShutdownSignal = OneShotSignal

extension OneShotSignal {
    /// Runs `body` until it returns, the RPC is cancelled or the signal is triggered; in the last two
    /// cases `body` is cancelled and this returns normally.
    package func run(until context: ServerContext, _ body: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask(operation: body)
            group.addTask { try? await context.cancellation.cancelled }
            group.addTask { await self.wait() }
            defer { group.cancelAll() }
            do {
                _ = try await group.next()
            } catch is CancellationError where isTriggered || context.cancellation.isCancelled {
                return
            }
        }
    }
}
