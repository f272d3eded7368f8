import Foundation
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Answers `GET /config` (and gRPC `GetConfig`) from the loaded configuration. The body holds no
/// key material by construction (only the number of API keys); every string taken from the
/// configuration also passes `Redaction`, so a credential embedded in a URL-like value is masked.
package struct WorkerConfigQueryService: Sendable {
    package let runtime: WorkerRuntime

    package init(runtime: WorkerRuntime) {
        self.runtime = runtime
    }

    /// The worker's identity, auth settings (without secrets) and messaging.
    package func config() async -> WorkerConfigResponse {
        let configuration = runtime.configuration
        let worker = configuration.worker
        let auth = worker.web.auth
        let safe = { (value: String) in Redaction.redactCredentials(value) }
        let namespaces = await runtime.templates.supportedNamespaces
        let queues = namespaces.map(QueueNames.workerQueue(namespace:)) + [QueueNames.stepResults]
        return WorkerConfigResponse(
            metadata: ConfigMetadata(
                timestamp: Date(), environment: configuration.common.execution.environment,
                version: TaskerWorkerVersion.current),
            workerID: safe(worker.workerId), workerType: safe(worker.workerType),
            auth: SafeAuthConfig(
                enabled: auth.enabled, verificationMethod: safe(auth.jwtVerificationMethod),
                jwtIssuer: safe(auth.jwtIssuer), jwtAudience: safe(auth.jwtAudience), apiKeyHeader: safe(auth.apiKeyHeader),
                apiKeyCount: auth.apiKeys.filter { !$0.key.isEmpty }.count + (auth.apiKey.isEmpty ? 0 : 1),
                strictValidation: auth.strictValidation, allowedAlgorithms: auth.jwtAllowedAlgorithms),
            messaging: SafeMessagingConfig(backend: configuration.common.queues.backend.rawValue, queues: queues))
    }
}
