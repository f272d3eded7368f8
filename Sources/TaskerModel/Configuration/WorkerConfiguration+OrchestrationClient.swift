import TaskerStepModel

extension WorkerConfiguration {
    /// Transports for the orchestration client (`orchestration_client.transport`).
    public enum ClientTransport: String, Codable, Sendable, CaseIterable {
        case rest
        case grpc
    }

    /// `[worker.orchestration_client]`: the orchestration REST API the C ABI's `tasker_client_*`
    /// functions call (upstream's FFI client bridge). Only `rest` is served; `grpc` is refused by
    /// those calls with a message saying so.
    public struct OrchestrationClient: Codable, Sendable, Equatable {
        public var baseUrl = "http://localhost:8080"
        public var transport = ClientTransport.rest
        /// Each attempt's limit, connecting included.
        public var timeoutMs = 30000
        /// Attempts after the first for a request that got no answer or a 502/503/504.
        public var maxRetries = 3
        /// `[worker.orchestration_client.auth]` (upstream's `ClientAuthMethod`, tagged by `type`).
        public var auth = ClientAuth()
        public init() {}
    }

    /// How the orchestration client authenticates: upstream's `type = "bearer"` with `token`, or
    /// `type = "api_key"` with `key` and `header_name`; `none` (ours, the default: upstream leaves
    /// the table out) sends no credentials.
    public struct ClientAuth: Codable, Sendable, Equatable {
        public var type = ClientAuthType.none
        /// The bearer token (`type = "bearer"`), sent as `Authorization: Bearer <token>`.
        public var token = ""
        /// The API key (`type = "api_key"`), sent in `header_name`.
        public var key = ""
        public var headerName = "X-API-Key"
        public init() {}
    }

    /// `orchestration_client.auth.type`.
    public enum ClientAuthType: String, Codable, Sendable, CaseIterable {
        case none
        case bearer
        case apiKey = "api_key"
    }
}
