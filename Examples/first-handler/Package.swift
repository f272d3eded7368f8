// swift-tools-version:6.2
import PackageDescription

// Your handlers, in an executable of your own that runs them on a worker built once: the C ABI
// library (libTaskerWorkerFFI.so) that scripts/dev builds in the worker's checkout. The package
// depends on the handler API and its host only, so its first build takes a minute or two.
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
            dependencies: [.product(name: "TaskerHandlerHost", package: "tasker-worker-swift")]
        ),
        .testTarget(
            name: "PaymentsWorkerTests",
            dependencies: [
                "PaymentsWorker",
                .product(name: "TaskerHandlerSDK", package: "tasker-worker-swift"),
                .product(name: "TaskerWorkerTesting", package: "tasker-worker-swift"),
            ]
        ),
    ]
)
