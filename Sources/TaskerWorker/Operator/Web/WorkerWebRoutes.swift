import Foundation
import Hummingbird
import Logging
import TaskerAuth
import TaskerHTTP

/// The REST routes (paths, permissions and bodies as upstream, `worker-contract.md` Appendix B).
/// Routes needing a permission sit in their own group, where the `WebAuthorizer`'s middleware goes.
enum WorkerWebRoutes {
    static func register(on router: Router<WorkerRequestContext>, runtime: WorkerRuntime, authorizer: WebAuthorizer?) {
        let health = WorkerHealthService(runtime: runtime, shared: runtime.healthProbes)
        let templates = WorkerTemplateQueryService(runtime: runtime)
        let configEnabled = runtime.configuration.worker.web.configEndpointEnabled

        router.get("/health") { _, _ in JSONResponses.make(health.basic()) }
        router.get("/health/live") { _, _ in JSONResponses.make(health.liveness()) }
        router.get("/health/ready") { _, context in
            let readiness = await health.readiness()
            guard readiness.isReady else {
                return JSONResponses.errorResponse(
                    .serviceUnavailable, message: "Worker is not ready to process steps",
                    status: .serviceUnavailable, context: context)
            }
            return JSONResponses.make(readiness)
        }
        router.get("/health/detailed") { _, _ in JSONResponses.make(await health.detailed()) }

        let read = protectedGroup(router, "/v1/templates", .templatesRead, authorizer)
        read.get { request, context in
            try rejectRepeatedParameters(request, ["namespace", "include_cache_stats"])
            let include = try boolParameter(request, "include_cache_stats") ?? false
            return try await respond(context: context) { () throws(TemplateQueryError) in
                try await templates.list(includeCacheStats: include)
            }
        }
        read.get("{namespace}/{name}/{version}") { _, context in
            let (namespace, name, version) = try templateKey(context)
            return try await respond(context: context) { () throws(TemplateQueryError) in
                try await templates.get(namespace: namespace, name: name, version: version)
            }
        }
        let validate = protectedGroup(router, "/v1/templates", .templatesValidate, authorizer)
        validate.post("{namespace}/{name}/{version}/validate") { _, context in
            let (namespace, name, version) = try templateKey(context)
            return try await respond(context: context) { () throws(TemplateQueryError) in
                try await templates.validate(namespace: namespace, name: name, version: version)
            }
        }

        if configEnabled {
            let configService = WorkerConfigQueryService(runtime: runtime)
            protectedGroup(router, "/config", .configRead, authorizer).get { _, _ in
                JSONResponses.make(await configService.config())
            }
        }
    }

    /// Serves the OpenAPI document for the routes `router` ended up with.
    static func registerDocs(on router: Router<WorkerRequestContext>, runtime: WorkerRuntime, metrics: Bool) {
        let document = WorkerOpenAPIDocument.make(
            configEndpoint: runtime.configuration.worker.web.configEndpointEnabled, metricsEndpoints: metrics)
        let body = (try? APIJSON.encode(document)) ?? Data()
        router.get("/api-docs/openapi.json") { _, _ in JSONResponses.raw(body) }
        SwaggerUIRoutes.register(on: router)
    }

    // MARK: - Helpers

    /// A group under `path` guarded by `authorizer`'s middleware for `permission` (if any).
    @discardableResult
    static func protectedGroup(
        _ router: Router<WorkerRequestContext>, _ path: RouterPath, _ permission: WorkerPermission,
        _ authorizer: WebAuthorizer?
    ) -> RouterGroup<WorkerRequestContext> {
        let group = router.group(path)
        if let middleware = authorizer?(permission) { group.add(middleware: middleware) }
        return group
    }

    /// A query parameter that must be `true` or `false` when present (as serde parses a bool).
    static func boolParameter(_ request: Request, _ name: String) throws -> Bool? {
        guard let value = request.uri.queryParameters.get(name) else { return nil }
        switch value {
        case "true": return true
        case "false": return false
        default:
            throw WebRequestError(
                code: .badRequest,
                message: "Invalid query parameter \(name): expected true or false, got \"\(value)\"")
        }
    }

    /// A query parameter given twice is an error, as serde's query deserializer makes it upstream.
    static func rejectRepeatedParameters(_ request: Request, _ names: [String]) throws {
        for name in names where request.uri.queryParameters.getAll(name).count > 1 {
            throw WebRequestError(code: .badRequest, message: "Invalid query: parameter \(name) given more than once")
        }
    }

    /// The template's path parameters, percent-decoded (as axum's `Path` decodes them); one that
    /// does not decode to UTF-8 is a 400 naming it.
    static func templateKey(_ context: WorkerRequestContext) throws -> (String, String, String) {
        func decoded(_ name: String) throws -> String {
            let raw = try context.parameters.require(name)
            guard let value = raw.removingPercentEncoding else {
                throw WebRequestError(code: .badRequest, message: "Invalid URL: invalid UTF-8 in path parameter \(name)")
            }
            return value
        }
        return (try decoded("namespace"), try decoded("name"), try decoded("version"))
    }

    /// The body of a template query, or its `ErrorResponse` (404 not found, 500 internal). A 500 body
    /// says only what class of failure it was and the request id; the detail is logged under that id.
    static func respond<T: Encodable & Sendable>(
        context: WorkerRequestContext,
        _ query: () async throws(TemplateQueryError) -> T
    ) async throws -> Response {
        do {
            return JSONResponses.make(try await query())
        } catch {
            let status: HTTPResponse.Status = error.kind == .internalError ? .internalServerError : .notFound
            var message = error.clientMessage
            if case .internalError = error {
                let requestID = context.requestID ?? "none"
                context.logger.error("template query failed", metadata: ["request_id": "\(requestID)", "error": "\(error)"])
                message += " (see the worker log for request \(requestID))"
            }
            return JSONResponses.make(
                ErrorResponse(error.kind, message: message, requestID: context.requestID),
                status: status)
        }
    }
}
