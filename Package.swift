// swift-tools-version:6.2
import Foundation
import PackageDescription

/// The compiler settings of every target (as the model projects use them): existentials spelled `any`,
/// and a module's members visible only where that module is imported.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "tasker-worker-swift",
    platforms: [.macOS(.v15)],
    products: [
        /// The SDK and the worker daemon: step handlers, the pipeline, the operator surface.
        .library(name: "TaskerWorker", targets: ["TaskerWorker"]),
        /// Unit-testing helpers for handler authors: a `StepContext` from a few values, no database.
        .library(name: "TaskerWorkerTesting", targets: ["TaskerWorkerTesting"]),
        // For a handler package: the handler API and the host that runs it on a prebuilt worker
        // (`libTaskerWorkerFFI.so`); no server dependency, so the package builds in a minute or two.
        .library(name: "TaskerHandlerSDK", targets: ["TaskerHandlerSDK"]),
        .library(name: "TaskerHandlerHost", targets: ["TaskerHandlerHost"]),
        /// The wire and domain types shared by workers and orchestration (messages, results, templates, configuration).
        .library(name: "TaskerModel", targets: ["TaskerModel"]),
        /// The AMQP 0-9-1 client (RabbitMQ): connection, channels, publisher confirms, consumers, reconnect.
        .library(name: "TaskerAMQP", targets: ["TaskerAMQP"]),
        /// The libpq client: connections, pipeline, pool, listener, row coding, migrations.
        .library(name: "TaskerPostgres", targets: ["TaskerPostgres"]),
        /// The embedded worker behind a C ABI (`bindings/c/include/tasker_worker.h`): handlers in
        /// any language with a C FFI (Python, Ruby) poll and complete steps of the FFI dispatch channel.
        .library(name: "TaskerWorkerFFI", type: .dynamic, targets: ["TaskerWorkerFFI"]),
        /// The production daemon: `run` (built-in handlers), `migrate`, `config check`.
        .executable(name: "tasker-worker", targets: ["TaskerWorkerCLI"]),
        /// Development tools: `run` with the example handlers, the companion `orchestrate`, `submit`, `progress`.
        .executable(name: "tasker-dev", targets: ["TaskerDevCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport", from: "2.9.2"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf", from: "2.4.1"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        // libpq, found through pkg-config (Debian: libpq-dev).
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // The text formats under both the client and the model: untrusted JSON's nesting bound,
        // credential redaction, PostgreSQL's timestamp text. Foundation only.
        .target(name: "TaskerText"),
        // The step's wire data a handler exchanges with the worker (JSON, results, failures, handler
        // definitions): Foundation and TaskerText only, so the handler API builds without the server.
        .target(name: "TaskerStepModel", dependencies: ["TaskerText"]),
        .target(
            name: "TaskerHandlerSDK",
            dependencies: ["TaskerStepModel", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "TaskerHandlerHost",
            dependencies: ["TaskerHandlerSDK", .product(name: "Logging", package: "swift-log")]
        ),
        // The PostgreSQL client. Knows nothing about Tasker.
        .target(
            name: "TaskerPostgres",
            dependencies: [
                "TaskerText",
                "CLibPQ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
            ]
        ),
        // The AMQP 0-9-1 client on SwiftNIO (RabbitMQ). Knows nothing about Tasker.
        .target(
            name: "TaskerAMQP",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The RabbitMQ transport both the worker and the orchestration use: the connection with its
        // declarations, publish-until-confirmed, the consumer loop that settles a delivery by its outcome.
        .target(
            name: "TaskerMessaging",
            dependencies: [
                "TaskerAMQP", "TaskerModel", "TaskerPostgres", "TaskerStore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Swagger UI's files (vendored by scripts/vendor-swagger-ui), embedded in the binary with `.incbin`
        // from the absolute path of files/ (any working directory builds it), served at /api-docs/ui/.
        .target(
            name: "CSwaggerUI",
            exclude: ["files"],
            cSettings: [.define("TASKER_SWAGGER_UI_FILES", to: "\"\(Context.packageDirectory)/Sources/CSwaggerUI/files/\"")]
        ),
        // Wire and domain types shared by worker and orchestration: messages, results, templates,
        // configuration, queue names. No database access (that is TaskerStore).
        .target(
            name: "TaskerModel",
            dependencies: [
                "TaskerText", "TaskerStepModel", "TaskerAMQP",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        // Tasker's tables and queues in PostgreSQL, shared by worker and orchestration: PGMQ's calls and
        // table layouts, the template registry, the pool from `[common.database]`, JSON cells.
        .target(
            name: "TaskerStore",
            dependencies: [
                "TaskerModel", "TaskerPostgres",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The operator surface's HTTP, shared by the worker's and the orchestration's REST servers: the
        // server set-up (bind address, connection limits, the bound address), request timeouts, the
        // cross-site guard, the API error body, Prometheus text, log throttling, Swagger UI (CSwaggerUI)
        // and the OpenAPI documents' schema building blocks.
        .target(
            name: "TaskerHTTP",
            dependencies: [
                "TaskerModel", "TaskerPostgres", "CSwaggerUI",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ]
        ),
        // The operator surface's authentication (JWT / API keys, permission middleware), shared by the
        // worker's and the orchestration's REST and gRPC APIs.
        .target(
            name: "TaskerAuth",
            dependencies: [
                "TaskerModel", "TaskerHTTP",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // Traces (issue #30): W3C Trace Context, the tracer (swift-distributed-tracing) and the OTLP/HTTP
        // exporter, shared by the worker and the orchestration.
        .target(
            name: "TaskerTelemetry",
            dependencies: [
                "TaskerModel",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The SDK (handlers) and the worker: intake → claim → capacity → dispatch → completion, runtime, operator surface.
        .target(
            name: "TaskerWorker",
            dependencies: [
                "TaskerPostgres", "TaskerModel", "TaskerStore", "TaskerAuth", "TaskerHTTP", "TaskerAMQP", "TaskerMessaging", "CSwaggerUI",
                "TaskerTelemetry", "TaskerHandlerSDK",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // The C ABI of the embedded worker (libTaskerWorkerFFI): @_cdecl entry points over TaskerWorker.
        .target(
            name: "TaskerWorkerFFI",
            dependencies: [
                "TaskerWorker", "TaskerModel", "TaskerPostgres", "TaskerStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // The orchestration client (`tasker_client_*`); already built for HummingbirdTesting.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        // Unit-testing helpers for handler authors: a StepContext from a few values, no database.
        .target(
            name: "TaskerWorkerTesting",
            dependencies: ["TaskerHandlerSDK", .product(name: "Logging", package: "swift-log")]
        ),
        // The companion orchestration: drives workflows in the database as Tasker's orchestration does.
        // It shares the client, the model and the REST auth (TaskerAuth) with the worker, never the worker itself.
        .target(
            name: "TaskerOrchestration",
            dependencies: [
                "TaskerPostgres", "TaskerModel", "TaskerStore", "TaskerAuth", "TaskerHTTP", "TaskerAMQP", "TaskerMessaging",
                "TaskerTelemetry", "CSwaggerUI",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // Example step handlers for the example workflows in config/tasks/examples (tasker-dev only).
        .target(
            name: "TaskerExamples",
            dependencies: ["TaskerWorker"]
        ),
        // tasker-worker: what operators run. No examples, no orchestration, no dev tools.
        .executableTarget(
            name: "TaskerWorkerCLI",
            dependencies: [
                "TaskerWorker", "TaskerPostgres", "TaskerModel", "TaskerStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // tasker-dev: the worker with the example handlers, the companion orchestration, submit, progress.
        .executableTarget(
            name: "TaskerDevCLI",
            dependencies: [
                "TaskerWorker", "TaskerPostgres", "TaskerModel", "TaskerStore", "TaskerHTTP", "TaskerOrchestration", "TaskerMessaging",
                "TaskerExamples",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // A real-PostgreSQL fixture for tests (template database, one fresh clone per test) and the helpers
        // the unit targets and TaskerSystemTests share.
        .target(
            name: "TaskerTestSupport",
            dependencies: [
                "TaskerPostgres", "TaskerModel", "TaskerStore", "TaskerWorker", "TaskerAMQP",
                .product(name: "Logging", package: "swift-log"), .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "CryptoExtras", package: "swift-crypto"), .product(name: "Yams", package: "Yams"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // The tests: unit targets, one per module (no database, broker or process: scripts/test runs them
        // first, in parallel), and TaskerSystemTests (real PostgreSQL, RabbitMQ, processes, fleets; bounded
        // parallelism). Shared fixtures in Tests/Fixtures, shared helpers in TaskerTestSupport.
        .testTarget(
            name: "TaskerModelTests",
            dependencies: ["TaskerModel", "TaskerPostgres", "TaskerStore", "TaskerAMQP", "TaskerTestSupport", "TaskerWorker"]),
        .testTarget(
            name: "TaskerPostgresTests",
            dependencies: ["TaskerPostgres", "TaskerModel", "TaskerStore", "TaskerWorker", "TaskerTestSupport"]),
        .testTarget(
            name: "TaskerOrchestrationTests",
            dependencies: [
                "TaskerOrchestration", "TaskerModel", "TaskerPostgres", "TaskerStore", "TaskerTestSupport", "TaskerHTTP",
                "TaskerAuth",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TaskerWorkerTests",
            dependencies: [
                "TaskerWorker", "TaskerPostgres", "TaskerModel", "TaskerStore", "TaskerAuth", "TaskerHTTP", "TaskerTestSupport",
                "TaskerExamples",
                "TaskerWorkerTesting", "TaskerOrchestration", "TaskerHandlerHost",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        // The AMQP client without a broker: the frame codec, configuration, a scripted hostile peer in process.
        .testTarget(
            name: "TaskerAMQPTests",
            dependencies: [
                "TaskerAMQP", "TaskerModel", "TaskerPostgres",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TaskerSystemTests",
            dependencies: [
                "TaskerWorker", "TaskerPostgres", "TaskerModel", "TaskerStore", "TaskerAuth", "TaskerHTTP", "TaskerTestSupport",
                "TaskerOrchestration", "TaskerMessaging",
                "TaskerExamples", "TaskerAMQP",
                "TaskerWorkerTesting",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The contract of every decoder of untrusted input (Fuzz/Checks), one check per libFuzzer target
        // (Fuzz/Targets, scripts/fuzz); the test suite replays each target's seed corpus and seeded
        // mutations of it through the same checks (TaskerFuzzChecksTests), on the ordinary build.
        .target(
            name: "TaskerFuzzChecks",
            dependencies: [
                "TaskerModel", "TaskerPostgres", "TaskerStore", "TaskerAMQP", "TaskerMessaging", "TaskerAuth", "TaskerHTTP",
                "TaskerOrchestration", "TaskerTelemetry",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                "TaskerWorker", "TaskerWorkerFFI", "TaskerHandlerHost", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Fuzz/Checks"
        ),
        .testTarget(name: "TaskerFuzzChecksTests", dependencies: ["TaskerFuzzChecks"]),
        .testTarget(
            name: "TaskerTelemetryTests",
            dependencies: [
                "TaskerTelemetry", .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "TaskerMessagingTests",
            dependencies: [
                "TaskerMessaging", "TaskerModel", "TaskerPostgres", "TaskerStore", "TaskerTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]),
    ]
)

// The libFuzzer executables (Fuzz/Targets, scripts/fuzz): declared only when TASKER_FUZZ=1, so that the
// ordinary build never sees them; scripts/fuzz builds them with `-sanitize=fuzzer,address` into
// .build-fuzz. Each is one line: the driver running one check of TaskerFuzzChecks.
if Context.environment["TASKER_FUZZ"] == "1" {
    // lld: gold stops with an internal error on the sanitized objects.
    let link: [LinkerSetting] = [.unsafeFlags(["-use-ld=lld"])]
    package.targets += [
        // libFuzzer's entry point (`LLVMFuzzerRunDriver`) for the Swift targets' own `main`.
        .target(name: "CTaskerFuzz", path: "Fuzz/CTaskerFuzz"),
        .target(name: "TaskerFuzzDriver", dependencies: ["CTaskerFuzz", "TaskerFuzzChecks"], path: "Fuzz/Driver"),
    ]
    // One executable per folder of Fuzz/Targets (FuzzReplayTests checks they match FuzzTarget.all).
    let targets = (try? FileManager.default.contentsOfDirectory(atPath: Context.packageDirectory + "/Fuzz/Targets")) ?? []
    for name in targets.sorted() {
        package.targets.append(
            .executableTarget(
                name: "Fuzz\(name)", dependencies: ["TaskerFuzzDriver", "TaskerFuzzChecks"], path: "Fuzz/Targets/\(name)",
                linkerSettings: link))
    }
}

for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + strictSettings
}
