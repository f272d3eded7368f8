// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "tasker-worker-swift",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "TaskerWorker", targets: ["TaskerWorker"]),
        .library(name: "TaskerWorkerTesting", targets: ["TaskerWorkerTesting"]),
        .executable(name: "tasker-worker", targets: ["TaskerWorkerCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-atomics", from: "1.3.0"),
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
    ],
    targets: [
        // libpq, found through pkg-config (Debian: libpq-dev).
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // The worker library: database client, configuration, migrations, and (later) the worker runtime.
        .target(
            name: "TaskerWorker",
            dependencies: [
                "CLibPQ",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Atomics", package: "swift-atomics"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // Unit-testing helpers for handler authors: a StepContext from a few values, no database.
        .target(
            name: "TaskerWorkerTesting",
            dependencies: ["TaskerWorker"]
        ),
        // The companion orchestration: drives workflows in the database as Tasker's orchestration does.
        .target(
            name: "TaskerOrchestration",
            dependencies: [
                "TaskerWorker",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
            ]
        ),
        // Example step handlers for the example workflows in config/tasks/.
        .target(
            name: "TaskerExamples",
            dependencies: ["TaskerWorker"]
        ),
        .executableTarget(
            name: "TaskerWorkerCLI",
            dependencies: [
                "TaskerWorker", "TaskerOrchestration", "TaskerExamples",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // A real-PostgreSQL fixture for tests: template database, one fresh clone per test.
        .target(
            name: "TaskerTestSupport",
            dependencies: ["TaskerWorker"]
        ),
        .testTarget(
            name: "TaskerWorkerTests",
            dependencies: [
                "TaskerWorker", "TaskerTestSupport", "TaskerOrchestration", "TaskerExamples", "TaskerWorkerTesting",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            exclude: ["Fixtures"]
        ),
    ]
)
