// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "payments",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../tasker-worker-swift"),
    ],
    targets: [
        .target(
            name: "PaymentsHandlers",
            dependencies: [.product(name: "TaskerWorker", package: "tasker-worker-swift")]
        ),
        .testTarget(
            name: "PaymentsHandlersTests",
            dependencies: [
                "PaymentsHandlers",
                .product(name: "TaskerWorkerTesting", package: "tasker-worker-swift"),
            ]
        ),
    ]
)
