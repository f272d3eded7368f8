import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import SwiftProtobuf
import Synchronization
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The worker's gRPC server, end to end: a real `WorkerDaemon` on a test database serving on a free
/// loopback port, called with a grpc-swift client.
@Suite("gRPC server", .timeLimit(.minutes(3)))
struct GRPCServerTests {
    static let yaml = """
        name: grpc_probe
        namespace_name: grpc_ns
        version: 2.1.0
        description: Probed over gRPC
        steps:
          - name: fetch
            description: Fetch the thing
            handler: { callable: tasker.noop }
            retry: { retryable: true, max_attempts: 4 }
          - name: store
            handler: { callable: tasker.noop }
            dependencies: [fetch]
            retry: { retryable: false, max_attempts: 1 }
        """

    typealias Client = GRPCClient<HTTP2ClientTransport.Posix>

    /// Starts a worker on `db` (configured by `adjust`), waits for its gRPC address, runs `body`
    /// with a connected client, then stops the worker (which must finish).
    static func withWorker(
        _ db: TestDatabase, adjust: (inout TaskerConfiguration) -> Void = { _ in },
        _ body: (PipelineHarness.RunningWorker, Client) async throws -> Void
    ) async throws {
        let harness = try await PipelineHarness.make(db, yaml: yaml)
        var configuration = harness.configuration()
        configuration.worker.web.enabled = false
        adjust(&configuration)
        let worker = harness.startWorker(.withBuiltIns(), configuration: configuration)
        do {
            var address: String?
            try await waitUntil(timeout: .seconds(20)) {
                address = worker.daemon.boundAddresses.grpc
                return address != nil
            }
            let bound = try BindAddress(parsing: try #require(address))
            let target: any ResolvableTarget =
                bound.isIPv6
                ? ResolvableTargets.IPv6.ipv6(address: bound.host, port: bound.port)
                : ResolvableTargets.IPv4.ipv4(address: bound.host, port: bound.port)
            try await withGRPCClient(transport: .http2NIOPosix(target: target, transportSecurity: .plaintext)) { client in
                try await body(worker, client)
            }
        } catch {
            try? await worker.stop()
            throw error
        }
        try await worker.stop()
    }

    static func split(_ address: String) throws -> (String, Int) {
        let colon = try #require(address.lastIndex(of: ":"))
        return (String(address[..<colon]), try #require(Int(address[address.index(after: colon)...])))
    }

    /// Waits until `CheckReadiness` succeeds (the pipeline is up and the listener connected).
    /// The first ready answer of `CheckReadiness` within 20 s (readiness may flap for a moment on a
    /// loaded machine: CI runs 88 suites at once on 2 cores).
    @discardableResult
    static func waitUntilReady(_ client: Client) async throws -> Tasker_V1_WorkerReadinessResponse {
        let health = Tasker_V1_WorkerHealthService.Client(wrapping: client)
        var ready: Tasker_V1_WorkerReadinessResponse?
        try await waitUntil(timeout: .seconds(20)) {
            ready = try? await health.checkReadiness(Tasker_V1_WorkerReadinessRequest())
            return ready != nil
        }
        return try #require(ready)
    }

    static func rpcCode(_ body: () async throws -> Void) async -> RPCError.Code? {
        do {
            try await body()
            return nil
        } catch let error as RPCError {
            return error.code
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    static func recent(_ timestamp: Google_Protobuf_Timestamp) -> Bool {
        abs(timestamp.date.timeIntervalSinceNow) < 60
    }

    @Test("WorkerHealthService answers with the REST health content")
    func workerHealthService() async throws {
        try await withTestDatabase { db in
            try await Self.withWorker(db) { worker, client in
                try await Self.waitUntilReady(client)
                let health = Tasker_V1_WorkerHealthService.Client(wrapping: client)
                let publicID = worker.daemon.identity.publicID

                let basic = try await health.checkHealth(Tasker_V1_WorkerHealthRequest())
                #expect(basic.status == "healthy" && basic.workerID == publicID && Self.recent(basic.timestamp))
                let live = try await health.checkLiveness(Tasker_V1_WorkerLivenessRequest())
                #expect(live.status == "alive" && live.workerID == publicID && Self.recent(live.timestamp))

                let ready = try await Self.waitUntilReady(client)
                #expect(ready.status == "ready" && ready.workerID == publicID && Self.recent(ready.timestamp))
                for check in [ready.checks.database, ready.checks.commandProcessor, ready.checks.queueProcessing] {
                    #expect(check.status == "healthy")
                    #expect(check.hasMessage && !check.message.isEmpty)
                    #expect(Self.recent(check.lastChecked))
                }
                let info = ready.systemInfo
                #expect(info.version == TaskerWorkerVersion.current)
                #expect(info.workerType == "command_processor")
                #expect(info.environment == worker.daemon.configuration.common.execution.environment)
                #expect(info.supportedNamespaces == ["grpc_ns"])
                #expect(info.commandProcessorActive)
                #expect(info.databasePoolSize >= 1)
                #expect(info.hasPoolUtilization && info.poolUtilization.taskerPool.maxConnections == 12)
                #expect(info.poolUtilization.pgmqPool.maxConnections == 12)

                let detailed = try await health.checkDetailedHealth(Tasker_V1_WorkerDetailedHealthRequest())
                #expect(["healthy", "degraded"].contains(detailed.status))
                #expect(detailed.workerID == publicID)
                let checks = detailed.checks
                #expect(checks.hasDatabase && checks.hasCommandProcessor && checks.hasQueueProcessing)
                #expect(checks.hasEventSystem && checks.hasStepProcessing && checks.hasCircuitBreakers)
                #expect(checks.database.status == "healthy" && checks.circuitBreakers.status == "healthy")
                #expect(checks.stepProcessing.status == "healthy")
                #expect(detailed.hasDistributedCache)
                #expect(!detailed.distributedCache.enabled && detailed.distributedCache.provider == "noop")
                #expect(detailed.systemInfo.supportedNamespaces == ["grpc_ns"])

                // The same content as the REST bodies, computed by the same service.
                let rest = await WorkerHealthService(runtime: worker.daemon.runtime).detailed()
                #expect(detailed.status == rest.status)
                #expect(detailed.systemInfo.workerType == rest.systemInfo.workerType)
            }
        }
    }

    @Test("a hostname bind address (localhost:0, accepted by config check) is resolved and served")
    func hostnameBindAddress() async throws {
        try await withTestDatabase { db in
            try await Self.withWorker(db, adjust: { $0.worker.grpc.bindAddress = "localhost:0" }) { worker, client in
                let address = try #require(worker.daemon.boundAddresses.grpc)
                #expect(address.hasPrefix("127.0.0.1:") || address.hasPrefix("[::1]:"), "\(address)")
                let health = Tasker_V1_WorkerHealthService.Client(wrapping: client)
                let basic = try await health.checkHealth(Tasker_V1_WorkerHealthRequest())
                #expect(basic.status == "healthy" && basic.workerID == worker.daemon.identity.publicID)
            }
        }
    }

    @Test("WorkerConfigService and WorkerTemplateService carry the REST content; NOT_FOUND for a missing template")
    func configAndTemplates() async throws {
        try await withTestDatabase { db in
            // GetConfig is gated by config_endpoint_enabled, like REST /config.
            try await Self.withWorker(db, adjust: { $0.worker.web.configEndpointEnabled = true }) { worker, client in
                let runtime = worker.daemon.runtime
                let config = try await Tasker_V1_WorkerConfigService.Client(wrapping: client)
                    .getConfig(Tasker_V1_WorkerGetConfigRequest())
                let rest = await WorkerConfigQueryService(runtime: runtime).config()
                var expected = Tasker_V1_WorkerGetConfigResponse(rest)
                expected.metadata.timestamp = config.metadata.timestamp
                #expect(config == expected)
                #expect(config.workerID == worker.daemon.configuration.worker.workerId)
                #expect(config.metadata.version == TaskerWorkerVersion.current && Self.recent(config.metadata.timestamp))
                #expect(config.auth.jwtIssuer == "tasker-worker" && config.auth.apiKeyHeader == "X-API-Key")
                #expect(config.auth.allowedAlgorithms == ["RS256"])
                #expect(config.messaging.backend == "pgmq" && !config.messaging.queues.isEmpty)

                let templates = Tasker_V1_WorkerTemplateService.Client(wrapping: client)
                var listRequest = Tasker_V1_WorkerListTemplatesRequest()
                listRequest.namespace = "ignored_namespace"
                let list = try await templates.listTemplates(listRequest)
                #expect(list.supportedNamespaces == ["grpc_ns"])
                #expect(list.templateCount == 1)
                #expect(!list.hasCacheStats)
                #expect(list.workerCapabilities == ["command_processing", "database_access", "message_queues", "ffi_integration"])
                listRequest.includeCacheStats = true
                let withStats = try await templates.listTemplates(listRequest)
                #expect(withStats.hasCacheStats && withStats.cacheStats.supportedNamespaces == ["grpc_ns"])

                var get = Tasker_V1_WorkerGetTemplateRequest()
                get.namespace = "grpc_ns"
                get.name = "grpc_probe"
                get.version = "2.1.0"
                let template = try await templates.getTemplate(get)
                #expect(template.template.name == "grpc_probe")
                #expect(template.template.namespace == "grpc_ns")
                #expect(template.template.version == "2.1.0")
                #expect(template.template.description_p == "Probed over gRPC")
                let steps = template.template.steps
                #expect(steps.map(\.name) == ["fetch", "store"])
                #expect(steps[0].description_p == "Fetch the thing" && steps[0].retryable && steps[0].maxAttempts == 4)
                #expect(!steps[1].hasDescription_p && !steps[1].retryable && steps[1].maxAttempts == 1)
                #expect(template.handlerMetadata.namespace == "grpc_ns")
                #expect(template.handlerMetadata.handlerName == "grpc_probe")
                #expect(template.handlerMetadata.version == "2.1.0")
                #expect(!template.handlerMetadata.hasDescription_p && template.handlerMetadata.stepNames.isEmpty)
                #expect(template.cached)
                #expect(!template.hasCacheAgeSeconds && !template.hasAccessCount)

                for (namespace, name, version) in [
                    ("grpc_ns", "nope", "2.1.0"), ("grpc_ns", "grpc_probe", "9.9.9"),
                    ("other_ns", "grpc_probe", "2.1.0"),
                ] {
                    var missing = Tasker_V1_WorkerGetTemplateRequest()
                    missing.namespace = namespace
                    missing.name = name
                    missing.version = version
                    let code = await Self.rpcCode { _ = try await templates.getTemplate(missing) }
                    #expect(code == .notFound, "\(namespace)/\(name)/\(version)")
                }
            }
        }
    }
}
