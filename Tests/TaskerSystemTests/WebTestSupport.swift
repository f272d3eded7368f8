import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// A real `WorkerDaemon` with its REST server on 127.0.0.1 (free port), two templates in namespace
/// `webtest` (`greet` 1.0.0 with built-in handlers; `broken` 2.0.0 whose handler does not exist),
/// and an HTTP client over real sockets.
struct WebTestWorker {
    let daemon: WorkerDaemon
    let running: PipelineHarness.RunningWorker
    let host: String
    let port: Int
    let admin: PostgresConnection

    static let templates = [
        "greet.yaml": """
        name: greet
        namespace_name: webtest
        version: 1.0.0
        description: Greets
        steps:
          - name: hello
            handler: { callable: tasker.echo }
          - name: shout
            dependencies: [hello]
            handler: { callable: tasker.noop }
        """,
        "broken.yaml": """
        name: broken
        namespace_name: webtest
        version: 2.0.0
        steps:
          - name: call_api
            handler: { callable: ExternalDatabaseFFI.Handler }
        """,
    ]

    /// A configuration on `db` with fast polling and loopback servers on free ports.
    static func configuration(_ db: TestDatabase) -> TaskerConfiguration {
        var configuration = TaskerConfiguration()
        configuration.common.database.url = db.url
        configuration.common.database.pool.maxConnections = 6
        configuration.common.database.pool.minConnections = 1
        configuration.worker.eventSystems.worker.metadata.fallbackPoller.pollingIntervalMs = 100
        configuration.worker.web.bindAddress = "127.0.0.1:0"
        configuration.worker.grpc.bindAddress = "127.0.0.1:0"
        return configuration
    }

    /// Starts the worker and waits until its REST server (and its gRPC server, when enabled) listens (and,
    /// with `waitForReady`, answers ready).
    static func start(
        _ db: TestDatabase, handlers: HandlerRegistry = .withBuiltIns(), waitForReady: Bool = true,
        configure: (inout TaskerConfiguration) -> Void = { _ in }
    ) async throws -> WebTestWorker {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("webtpl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (file, yaml) in templates {
            try yaml.write(to: directory.appendingPathComponent(file), atomically: true, encoding: .utf8)
        }
        var configuration = Self.configuration(db)
        configure(&configuration)
        let daemon = WorkerDaemon(
            configuration: configuration, handlers: handlers,
            templateLoader: TaskTemplateLoader(environment: ["TASKER_TEMPLATE_PATH": directory.path]))
        let task = Task { try await daemon.run() }
        let running = PipelineHarness.RunningWorker(daemon: daemon, task: task)
        // Both servers publish their address once listening; REST binds first, so a test that talks
        // gRPC right after start would otherwise race the gRPC server's bind.
        let grpcEnabled = configuration.worker.grpc.enabled
        var address: String?
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while address == nil, ContinuousClock.now < deadline {
            let bound = daemon.boundAddresses
            if bound.web != nil, !grpcEnabled || bound.grpc != nil { address = bound.web }
            if address == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        guard let address, let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
            try? await running.stop()
            throw TestSetupError("the REST and gRPC servers did not publish their addresses")
        }
        let worker = WebTestWorker(
            daemon: daemon, running: running, host: String(address[..<colon]), port: port,
            admin: try await db.connect())
        if waitForReady {
            try await waitUntil(timeout: .seconds(20)) { try await worker.get("/health/ready").status == .ok }
        }
        return worker
    }

    func get(_ path: String, headers: HTTPFields = [:]) async throws -> TestClient.Response {
        try await execute(TestClient.Request(path, method: .get, headers: headers))
    }

    func post(_ path: String, headers: HTTPFields = [:]) async throws -> TestClient.Response {
        try await execute(TestClient.Request(path, method: .post, headers: headers))
    }

    func execute(_ request: TestClient.Request) async throws -> TestClient.Response {
        try await TestClient.withClient(host: host, port: port) { client in try await client.execute(request) }
    }

    func stop() async throws {
        await admin.close()
        try await running.stop()
    }

    // MARK: - Field-by-field expectations

    /// A `HealthCheck`: exactly its four fields, with `status`.
    static func expectHealthCheck(
        _ check: JSONValue?, status: String, _ name: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(check?.keys == ["duration_ms", "last_checked", "message", "status"], "\(name)", sourceLocation: sourceLocation)
        #expect(check?["status"] == .string(status), "\(name): \(String(describing: check))", sourceLocation: sourceLocation)
        #expect(check?["duration_ms"]?.intValue.map { $0 >= 0 } == true, "\(name)", sourceLocation: sourceLocation)
        #expect(isTimestamp(check?["last_checked"]), "\(name)", sourceLocation: sourceLocation)
        #expect(check?["message"]?.stringValue != nil, "\(name)", sourceLocation: sourceLocation)
    }

    /// A `WorkerSystemInfo` with its pool figures.
    static func expectSystemInfo(_ info: JSONValue?, namespaces: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            info?.keys == [
                "command_processor_active", "database_pool_size", "environment", "pool_utilization",
                "supported_namespaces", "uptime_seconds", "version", "worker_type",
            ], sourceLocation: sourceLocation)
        #expect(info?["version"] == .string(TaskerWorkerVersion.current), sourceLocation: sourceLocation)
        #expect(info?["worker_type"] == "command_processor", sourceLocation: sourceLocation)
        #expect(info?["environment"] == .string(TaskerConfiguration().common.execution.environment), sourceLocation: sourceLocation)
        #expect(info?["supported_namespaces"] == .array(namespaces.map(JSONValue.string)), sourceLocation: sourceLocation)
        #expect(info?["uptime_seconds"]?.intValue.map { $0 >= 0 } == true, sourceLocation: sourceLocation)
        #expect(info?["database_pool_size"]?.intValue.map { $0 >= 1 } == true, sourceLocation: sourceLocation)
        let pools = info?["pool_utilization"]
        #expect(pools?.keys == ["pgmq_pool", "tasker_pool"], sourceLocation: sourceLocation)
        for name in ["pgmq_pool", "tasker_pool"] {
            let pool = pools?[name]
            #expect(
                pool?.keys == [
                    "acquire_errors", "active_connections", "average_acquire_time_ms", "idle_connections",
                    "max_acquire_time_ms", "max_connections", "slow_acquires", "total_acquires",
                    "utilization_percent",
                ], sourceLocation: sourceLocation)
            #expect(pool?["max_connections"] == 6, sourceLocation: sourceLocation)
            #expect(pool?["total_acquires"]?.intValue.map { $0 >= 1 } == true, sourceLocation: sourceLocation)
            #expect(pool?["utilization_percent"]?.doubleValue != nil, sourceLocation: sourceLocation)
        }
    }

    /// A chrono-style UTC timestamp (`2026-03-21T21:16:08.123456Z`).
    static func isTimestamp(_ value: JSONValue?) -> Bool {
        guard let text = value?.stringValue, text.hasSuffix("Z"), text.count >= 20 else { return false }
        return ResultTimestamp.parse(text) != nil
    }
}

extension TestClient.Response {
    var text: String { body.map { String(buffer: $0) } ?? "" }

    /// The body as JSON (throws when it is not JSON).
    func json() throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }
}
