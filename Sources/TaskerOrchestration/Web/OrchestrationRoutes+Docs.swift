import Hummingbird
import TaskerHTTP

extension OrchestrationRoutes {
    /// `GET /api-docs/openapi.json` (``OrchestrationOpenAPIDocument``, encoded once) and Swagger UI at
    /// `/api-docs/ui/` for it (TaskerHTTP's `SwaggerUIRoutes`, the worker's too), public as upstream's
    /// orchestration serves them.
    static func addDocumentation(to router: Router<Context>) {
        let document = OrchestrationOpenAPIDocument.encoded
        router.get("api-docs/openapi.json") { _, _ in json(document) }
        SwaggerUIRoutes.register(on: router)
    }
}
