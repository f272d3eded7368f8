import TaskerTestSupport
import Testing

@testable import TaskerModel

/// The connection limits of the REST and gRPC servers (issue #11 item 5) as configured: their defaults,
/// and out-of-range values refused naming their key. (Enforced over real sockets: `ConnectionLimitTests`
/// in TaskerSystemTests.)
@Suite("Connection limits: configuration", .timeLimit(.minutes(3)))
struct ConnectionLimitConfigurationTests {
    @Test func limitsHaveDefaultsAndOutOfRangeValuesNameTheirKey() throws {
        let defaults = TaskerConfiguration().worker
        #expect(
            defaults.web.maxConnections == 1000 && defaults.web.headerReadTimeoutSeconds == 30
                && defaults.web.idleTimeoutSeconds == 75)
        #expect(
            defaults.grpc.maxConnections == 1000 && defaults.grpc.idleTimeoutSeconds == 120
                && defaults.grpc.maxConnectionAgeSeconds == 0 && defaults.grpc.maxConnectionAgeGraceSeconds == 30)
        try withTemporaryDirectory { dir in
            let file = try writeFile(
                dir, "limits.toml",
                """
                [worker.web]
                max_connections = 0
                header_read_timeout_seconds = 0
                [worker.grpc]
                idle_timeout_seconds = 0
                """)
            let error = #expect(throws: ConfigurationLoadError.self) {
                try ConfigurationLoader(environment: [:]).load(files: [file])
            }
            #expect(
                error?.issues.map(\.description).sorted() == [
                    "\(file): worker.grpc.idle_timeout_seconds = 0: must be between 1 and 86400",
                    "\(file): worker.web.header_read_timeout_seconds = 0: must be between 1 and 3600",
                    "\(file): worker.web.max_connections = 0: must be between 1 and 100000",
                ])
        }
    }
}
