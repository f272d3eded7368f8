import Foundation
import GRPCCore
import GRPCProtobuf
import Logging

/// `tasker.v1.WorkerConfigService`: the `/config` body over gRPC (permission `worker:config_read`).
///
/// Like `/config` (not mounted, so 404), it is gated by `worker.web.config_endpoint_enabled`: while that
/// is false `GetConfig` fails with NOT_FOUND "Worker configuration not found" (upstream's NOT_FOUND
/// message; upstream itself does not gate the RPC — our hardening, so one switch closes both surfaces).
struct WorkerConfigGRPCService: Tasker_V1_WorkerConfigService.SimpleServiceProtocol {
    private let config: WorkerConfigQueryService

    /// The NOT_FOUND message while the config endpoint is disabled.
    static let disabledMessage = "Worker configuration not found"

    /// Serves what `config` computes (the same as `GET /config`).
    package init(config: WorkerConfigQueryService) {
        self.config = config
    }

    func getConfig(
        request: Tasker_V1_WorkerGetConfigRequest,
        context: ServerContext
    ) async throws -> Tasker_V1_WorkerGetConfigResponse {
        guard config.runtime.configuration.worker.web.configEndpointEnabled else {
            throw RPCError(code: .notFound, message: Self.disabledMessage)
        }
        return Tasker_V1_WorkerGetConfigResponse(await config.config())
    }
}

/// `tasker.v1.WorkerTemplateService`: the `/v1/templates…` bodies over gRPC (permission
/// `worker:templates_read` once authentication is wired).
///
/// `ListTemplates` ignores `namespace` and honours `include_cache_stats`; `GetTemplate` fails with
/// NOT_FOUND for a template this worker does not serve, INTERNAL when the database fails (a generic
/// message with a reference id; the detail is logged under that id).
struct WorkerTemplateGRPCService: Tasker_V1_WorkerTemplateService.SimpleServiceProtocol {
    private let templates: WorkerTemplateQueryService
    private static let logger = Logger(label: "tasker.worker.grpc")

    /// Serves what `templates` computes (the same as `/v1/templates…`).
    package init(templates: WorkerTemplateQueryService) {
        self.templates = templates
    }

    func listTemplates(
        request: Tasker_V1_WorkerListTemplatesRequest,
        context: ServerContext
    ) async throws -> Tasker_V1_WorkerTemplateListResponse {
        do throws(TemplateQueryError) {
            return Tasker_V1_WorkerTemplateListResponse(try await templates.list(includeCacheStats: request.includeCacheStats))
        } catch {
            throw Self.status(error)
        }
    }

    func getTemplate(
        request: Tasker_V1_WorkerGetTemplateRequest,
        context: ServerContext
    ) async throws -> Tasker_V1_WorkerTemplateResponse {
        do throws(TemplateQueryError) {
            let body = try await templates.get(namespace: request.namespace, name: request.name, version: request.version)
            return Tasker_V1_WorkerTemplateResponse(body)
        } catch {
            throw Self.status(error)
        }
    }

    /// The gRPC status of a failed query; an internal error is logged under a new reference id.
    static func status(_ error: TemplateQueryError) -> RPCError {
        switch error {
        case .templateNotFound, .handlerMetadataNotFound:
            return RPCError(code: .notFound, message: error.clientMessage)
        case .internalError:
            let reference = UUID().uuidString.lowercased()
            logger.error("template query failed", metadata: ["request_id": "\(reference)", "error": "\(error)"])
            return RPCError(code: .internalError, message: "\(error.clientMessage) (see the worker log for request \(reference))")
        }
    }
}
