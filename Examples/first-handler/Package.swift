// swift-tools-version:6.2
import PackageDescription

// Your own worker: your handlers, next to the built-in ones, in an executable of your own.
let package = Package(
    name: "payments-worker",
    platforms: [.macOS(.v15)],
    dependencies: [
        // This repository. From elsewhere: .package(url: "<this repository's git URL>", branch: "main")
        .package(name: "tasker-worker-swift", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "PaymentsWorker",
            dependencies: [.product(name: "TaskerWorker", package: "tasker-worker-swift")]
        ),
        .testTarget(
            name: "PaymentsWorkerTests",
            dependencies: [
                "PaymentsWorker",
                .product(name: "TaskerWorker", package: "tasker-worker-swift"),
                .product(name: "TaskerWorkerTesting", package: "tasker-worker-swift"),
            ]
        ),
    ]
)
