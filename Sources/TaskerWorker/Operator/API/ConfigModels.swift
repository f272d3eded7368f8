import Foundation

// `GET /config` (and gRPC `WorkerConfigService.GetConfig`): the worker's configuration without
// secrets — only counts and names of credentials, never their values.

/// `GET /config` (`WorkerConfigResponse`).
package struct WorkerConfigResponse: Codable, Sendable, Equatable {
    package var metadata: ConfigMetadata
    /// `[worker].worker_id` from the configuration (not the runtime id).
    package var workerID: String
    package var workerType: String
    package var auth: SafeAuthConfig
    package var messaging: SafeMessagingConfig

    package init(metadata: ConfigMetadata, workerID: String, workerType: String, auth: SafeAuthConfig, messaging: SafeMessagingConfig) {
        self.metadata = metadata
        self.workerID = workerID
        self.workerType = workerType
        self.auth = auth
        self.messaging = messaging
    }

    enum CodingKeys: String, CodingKey {
        case metadata, auth, messaging
        case workerID = "worker_id"
        case workerType = "worker_type"
    }
}

/// When and for which environment and version the configuration was rendered (`ConfigMetadata`).
package struct ConfigMetadata: Codable, Sendable, Equatable {
    package var timestamp: Date
    package var environment: String
    package var version: String

    package init(timestamp: Date, environment: String, version: String) {
        self.timestamp = timestamp
        self.environment = environment
        self.version = version
    }
}

/// `worker.web.auth` without key material (`SafeAuthConfig`).
package struct SafeAuthConfig: Codable, Sendable, Equatable {
    package var enabled: Bool
    /// `public_key` or `jwks` (`jwt_verification_method`).
    var verificationMethod: String
    package var jwtIssuer: String
    package var jwtAudience: String
    package var apiKeyHeader: String
    /// How many API keys are configured (`api_keys` entries plus a non-empty legacy `api_key`).
    var apiKeyCount: Int
    package var strictValidation: Bool
    var allowedAlgorithms: [String]

    package init(
        enabled: Bool, verificationMethod: String, jwtIssuer: String, jwtAudience: String, apiKeyHeader: String,
        apiKeyCount: Int, strictValidation: Bool, allowedAlgorithms: [String]
    ) {
        self.enabled = enabled
        self.verificationMethod = verificationMethod
        self.jwtIssuer = jwtIssuer
        self.jwtAudience = jwtAudience
        self.apiKeyHeader = apiKeyHeader
        self.apiKeyCount = apiKeyCount
        self.strictValidation = strictValidation
        self.allowedAlgorithms = allowedAlgorithms
    }

    enum CodingKeys: String, CodingKey {
        case enabled
        case verificationMethod = "verification_method"
        case jwtIssuer = "jwt_issuer"
        case jwtAudience = "jwt_audience"
        case apiKeyHeader = "api_key_header"
        case apiKeyCount = "api_key_count"
        case strictValidation = "strict_validation"
        case allowedAlgorithms = "allowed_algorithms"
    }
}

/// The messaging backend and the queues this worker uses (`SafeMessagingConfig`).
package struct SafeMessagingConfig: Codable, Sendable, Equatable {
    /// `pgmq` or `rabbitmq`.
    package var backend: String
    package var queues: [String]

    package init(backend: String, queues: [String]) {
        self.backend = backend
        self.queues = queues
    }
}
