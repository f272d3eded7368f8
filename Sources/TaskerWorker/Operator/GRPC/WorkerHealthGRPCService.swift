import Foundation
import GRPCCore
import GRPCProtobuf

/// `tasker.v1.WorkerHealthService`: the REST health bodies over gRPC (no authentication).
///
/// `CheckHealth` and `CheckLiveness` always answer (`healthy`, `alive`); `CheckReadiness` fails with
/// UNAVAILABLE "Worker is not ready" unless every readiness check is healthy; `CheckDetailedHealth`
/// always answers (`healthy` or `degraded`).
struct WorkerHealthGRPCService: Tasker_V1_WorkerHealthService.SimpleServiceProtocol {
    private let health: WorkerHealthService

    /// Serves the bodies `health` computes (the same as `/health…`).
    package init(health: WorkerHealthService) {
        self.health = health
    }

    func checkHealth(
        request: Tasker_V1_WorkerHealthRequest,
        context: ServerContext
    ) async throws -> Tasker_V1_WorkerBasicHealthResponse {
        Tasker_V1_WorkerBasicHealthResponse(health.basic())
    }

    func checkLiveness(
        request: Tasker_V1_WorkerLivenessRequest,
        context: ServerContext
    ) async throws -> Tasker_V1_WorkerBasicHealthResponse {
        Tasker_V1_WorkerBasicHealthResponse(health.liveness())
    }

    func checkReadiness(
        request: Tasker_V1_WorkerReadinessRequest,
        context: ServerContext
    ) async throws -> Tasker_V1_WorkerReadinessResponse {
        let readiness = await health.readiness()
        guard readiness.isReady else {
            throw RPCError(code: .unavailable, message: "Worker is not ready")
        }
        return Tasker_V1_WorkerReadinessResponse(readiness)
    }

    func checkDetailedHealth(
        request: Tasker_V1_WorkerDetailedHealthRequest,
        context: ServerContext
    ) async throws -> Tasker_V1_WorkerDetailedHealthResponse {
        Tasker_V1_WorkerDetailedHealthResponse(await health.detailed())
    }
}
