import Foundation
import GRPCCore
import GRPCProtobuf

/// `tasker.v1.WorkerConfigService`: the `/config` body over gRPC (permission `worker:config_read`
/// once authentication is wired). Unlike `/config`, it is not gated by `config_endpoint_enabled`.
public struct WorkerConfigGRPCService: Tasker_V1_WorkerConfigService.SimpleServiceProtocol {
    private let config: WorkerConfigQueryService

    /// Serves what `config` computes (the same as `GET /config`).
    public init(config: WorkerConfigQueryService) {
        self.config = config
    }

    public func getConfig(request: Tasker_V1_WorkerGetConfigRequest,
                          context: ServerContext) async throws -> Tasker_V1_WorkerGetConfigResponse {
        Tasker_V1_WorkerGetConfigResponse(await config.config())
    }
}

/// `tasker.v1.WorkerTemplateService`: the `/v1/templates…` bodies over gRPC (permission
/// `worker:templates_read` once authentication is wired).
///
/// `ListTemplates` ignores `namespace` and honours `include_cache_stats`; `GetTemplate` fails with
/// NOT_FOUND for a template this worker does not serve, INTERNAL when the database fails.
public struct WorkerTemplateGRPCService: Tasker_V1_WorkerTemplateService.SimpleServiceProtocol {
    private let templates: WorkerTemplateQueryService

    /// Serves what `templates` computes (the same as `/v1/templates…`).
    public init(templates: WorkerTemplateQueryService) {
        self.templates = templates
    }

    public func listTemplates(request: Tasker_V1_WorkerListTemplatesRequest,
                              context: ServerContext) async throws -> Tasker_V1_WorkerTemplateListResponse {
        do throws(TemplateQueryError) {
            return Tasker_V1_WorkerTemplateListResponse(try await templates.list(includeCacheStats: request.includeCacheStats))
        } catch {
            throw Self.status(error)
        }
    }

    public func getTemplate(request: Tasker_V1_WorkerGetTemplateRequest,
                            context: ServerContext) async throws -> Tasker_V1_WorkerTemplateResponse {
        do throws(TemplateQueryError) {
            let body = try await templates.get(namespace: request.namespace, name: request.name, version: request.version)
            return Tasker_V1_WorkerTemplateResponse(body)
        } catch {
            throw Self.status(error)
        }
    }

    /// The gRPC status of a failed query.
    static func status(_ error: TemplateQueryError) -> RPCError {
        switch error {
        case .templateNotFound, .handlerMetadataNotFound:
            RPCError(code: .notFound, message: error.description)
        case .internalError:
            RPCError(code: .internalError, message: error.description)
        }
    }
}
