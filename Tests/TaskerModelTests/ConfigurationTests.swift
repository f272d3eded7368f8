import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

@Suite("Configuration: loading the repository's files")
struct ConfigurationFilesTests {
    func load(_ environment: [String: String]) throws -> LoadedConfiguration {
        try ConfigurationLoader(environment: environment, configRoot: repositoryConfigRoot).load()
    }

    @Test func baseFilesEqualTheBuiltInDefaults() throws {
        let loader = ConfigurationLoader(environment: [:], configRoot: repositoryConfigRoot)
        let loaded = try loader.load(files: [repositoryConfigRoot + "/base/common.toml", repositoryConfigRoot + "/base/worker.toml"])
        #expect(loaded.configuration == TaskerConfiguration())
        #expect(loaded.warnings.isEmpty)
    }

    @Test func developmentIsTheDefaultEnvironment() throws {
        let loaded = try load([:])
        let config = loaded.configuration
        #expect(loaded.environment == "development")
        #expect(loaded.sources.map { ($0 as NSString).lastPathComponent } == ["common.toml", "worker.toml", "common.toml"])
        #expect(loaded.warnings.isEmpty)
        #expect(config.worker.mpscChannels.handlerDispatch.maxConcurrentHandlers == 10)
        #expect(config.worker.mpscChannels.handlerDispatch.handlerTimeoutMs == 30000)
        #expect(config.common.database.url == "postgresql://localhost/tasker")
        #expect(config.common.database.pool.slowAcquireThresholdMs == 200)
        #expect(config.common.cache.enabled)
        #expect(config.common.execution.environment == "development")
        #expect(config.worker.web.bindAddress == "0.0.0.0:8081")
        #expect(config.worker.grpc.bindAddress == "0.0.0.0:9191")
        #expect(config.worker.eventSystems.worker.deploymentMode == .hybrid)
        #expect(config.common.queues.backend == .pgmq)
    }

    @Test func testEnvironment() throws {
        let config = try load(["TASKER_ENV": "test"]).configuration
        #expect(config.worker.workerId == "test-worker-001")
        #expect(config.worker.mpscChannels.handlerDispatch.maxConcurrentHandlers == 5)
        #expect(config.worker.mpscChannels.handlerDispatch.handlerTimeoutMs == 5000)
        #expect(config.worker.mpscChannels.handlerDispatch.dispatchBufferSize == 100)
        #expect(config.worker.web.configEndpointEnabled)
        #expect(config.worker.grpc.keepaliveIntervalSeconds == 10)
        #expect(config.common.database.url == "postgresql://tasker:tasker@localhost:5432/tasker_rust_test")
        #expect(config.common.database.pool.maxConnections == 30)
        #expect(config.common.backoff.defaultBackoffSeconds == [1, 2, 4])
        #expect(config.common.queues.pgmq.pollIntervalMs == 250)
        #expect(config.common.execution.environment == "test")
    }

    @Test func productionEnvironment() throws {
        let config = try load(["TASKER_ENV": "production"]).configuration
        #expect(config.worker.workerId == "prod-worker-001")
        #expect(config.worker.mpscChannels.handlerDispatch.maxConcurrentHandlers == 50)
        #expect(config.worker.mpscChannels.handlerDispatch.handlerTimeoutMs == 60000)
        #expect(config.worker.orchestrationClient.baseUrl == "http://orchestration:8080")
        #expect(config.common.database.pool.maxConnections == 50)
        #expect(config.common.pgmqDatabase.pool.maxConnections == 25)
        #expect(config.common.cache.analyticsTtlSeconds == 120)
        #expect(config.common.execution.environment == "production")
    }

    @Test func preMergedFileEqualsTheTestLayers() throws {
        let generated = repositoryConfigRoot + "/generated/worker-test.toml"
        let single = try ConfigurationLoader(environment: ["TASKER_CONFIG_PATH": generated, "TASKER_ENV": "test"]).load()
        #expect(single.sources == [generated])
        #expect(single.warnings.isEmpty)
        #expect(single.configuration == (try load(["TASKER_ENV": "test"])).configuration)
    }

    @Test func unknownEnvironmentIsAnError() throws {
        let error = #expect(throws: ConfigurationLoadError.self) { try load(["TASKER_ENV": "staging"]) }
        #expect(error?.issues.map(\.description) == ["TASKER_ENV=\"staging\" must be one of: test, development, production"])
    }

    @Test func configRootFollowsWorkspacePath() {
        #expect(ConfigurationLoader(environment: ["WORKSPACE_PATH": "/srv/app"]).configRoot == "/srv/app/config/tasker")
        #expect(ConfigurationLoader(environment: [:]).configRoot == "config/tasker")
    }

    /// Issue #31 item 2: a tool built in a checkout finds that checkout's configuration from any working
    /// directory (this test's executable is under the checkout's `.build`).
    @Test func anExecutableBuiltInACheckoutFindsItsConfiguration() throws {
        let root = try #require(ConfigurationLoader.executablesCheckoutRoot)
        #expect(root.hasSuffix("/config/tasker") && FileManager.default.fileExists(atPath: root + "/base/worker.toml"))
    }
}

@Suite("Configuration: environment variables")
struct ConfigurationSubstitutionTests {
    @Test func setVariablesReplaceTheirDefaults() throws {
        let environment = [
            "DATABASE_URL": "postgres://tasker:s3cret@db.internal:6543/tasker_prod",
            "TASKER_WEB_BIND_ADDRESS": "127.0.0.1:18081",
            "TASKER_WORKER_GRPC_BIND_ADDRESS": "[::1]:19191",
            "TASKER_MESSAGING_BACKEND": "rabbitmq",
        ]
        let config = try ConfigurationLoader(environment: environment, configRoot: repositoryConfigRoot).load().configuration
        #expect(config.common.database.url == "postgres://tasker:s3cret@db.internal:6543/tasker_prod")
        #expect(config.worker.web.bindAddress == "127.0.0.1:18081")
        #expect(config.worker.grpc.bindAddress == "[::1]:19191")
        #expect(config.common.queues.backend == .rabbitmq)
    }

    @Test func referenceWithoutDefaultUsesTheVariable() throws {
        try withTemporaryDirectory { dir in
            let file = try writeFile(dir, "c.toml", "[worker]\nworker_id = \"w-${TASKER_WORKER_ID}\"\n")
            let config = try ConfigurationLoader(environment: ["TASKER_WORKER_ID": "blue-7"]).load(file: file).configuration
            #expect(config.worker.workerId == "w-blue-7")
        }
    }

    @Test func missingVariableWithoutDefaultIsAnError() throws {
        let (error, file) = try loadError("[common.database]\nurl = \"${DATABASE_URL}\"\n")
        #expect(error.issues.count == 1)
        #expect(
            error.issues.first?.description == "\(file): common.database.url = \"${DATABASE_URL}\": "
                + "environment variable DATABASE_URL is not set and ${DATABASE_URL} has no default "
                + "(write ${DATABASE_URL:-default} to give one)")
    }

    @Test func invalidVariableValueIsAnError() throws {
        let (error, file) = try loadError(
            "[worker.web]\nbind_address = \"${TASKER_WEB_BIND_ADDRESS:-0.0.0.0:8081}\"\n",
            environment: ["TASKER_WEB_BIND_ADDRESS": "everywhere"])
        #expect(
            error.issues.map(\.description) == [
                "\(file): worker.web.bind_address = \"${TASKER_WEB_BIND_ADDRESS:-0.0.0.0:8081}\": "
                    + "environment variable TASKER_WEB_BIND_ADDRESS has an invalid value \"everywhere\": must be host:port"
            ])
    }

    @Test func variableOutsideTheAllowListIsLeftAlone() throws {
        try withTemporaryDirectory { dir in
            let file = try writeFile(dir, "c.toml", "[worker]\nworker_type = \"${HOME:-x}\"\n")
            let loaded = try ConfigurationLoader(environment: ["HOME": "/root"]).load(file: file)
            #expect(loaded.configuration.worker.workerType == "${HOME:-x}")
            #expect(loaded.warnings.count == 1)
            #expect(loaded.warnings.first?.keyPath == "worker.worker_type")
            #expect(loaded.warnings.first?.problem.contains("'HOME' is not an allow-listed variable") == true)
        }
    }
}

@Suite("Configuration: errors and warnings")
struct ConfigurationErrorTests {
    @Test func valueOutOfRangeNamesFileKeyValueAndRange() throws {
        let (error, file) = try loadError("[worker.mpsc_channels.handler_dispatch]\nmax_concurrent_handlers = 0\n")
        #expect(
            error.issues.map(\.description) == [
                "\(file): worker.mpsc_channels.handler_dispatch.max_concurrent_handlers = 0: must be between 1 and 10000"
            ])
        #expect(error.issues.first?.keyPath == "worker.mpsc_channels.handler_dispatch.max_concurrent_handlers")
        #expect(error.issues.first?.value == "0")
    }

    @Test func wrongTypeNamesExpectedAndFoundTypes() throws {
        let (error, file) = try loadError("[worker.mpsc_channels.handler_dispatch]\nmax_concurrent_handlers = \"ten\"\n")
        #expect(
            error.issues.map(\.description) == [
                "\(file): worker.mpsc_channels.handler_dispatch.max_concurrent_handlers = \"ten\": "
                    + "wrong type: expected an integer, found a string"
            ])
    }

    @Test func tableWhereValueExpected() throws {
        let (error, _) = try loadError("[worker.web.bind_address]\nhost = \"x\"\n")
        #expect(error.issues.first?.problem == "wrong type: expected a string, found a table")
    }

    @Test func unknownKeyIsAWarningWithItsPath() throws {
        try withTemporaryDirectory { dir in
            let file = try writeFile(dir, "c.toml", "[worker.web]\nbind_adress = \"0.0.0.0:1\"\n[worker.extra]\nx = 1\n")
            let loaded = try ConfigurationLoader(environment: [:]).load(file: file)
            #expect(loaded.configuration == TaskerConfiguration())
            #expect(
                loaded.warnings.map(\.description) == [
                    "\(file): worker.extra: unknown key (ignored)",
                    "\(file): worker.web.bind_adress: unknown key (ignored); did you mean 'bind_address'?",
                ])
        }
    }

    @Test func invalidDeploymentModeListsTheAllowedValues() throws {
        let (error, file) = try loadError("[worker.event_systems.worker]\ndeployment_mode = \"Sometimes\"\n")
        #expect(
            error.issues.map(\.description) == [
                "\(file): worker.event_systems.worker.deployment_mode = \"Sometimes\": "
                    + "must be one of: Hybrid, EventDrivenOnly, PollingOnly, Disabled"
            ])
    }

    @Test func everyErrorIsReportedTogether() throws {
        let (error, file) = try loadError(
            """
            [common.database]
            url = "mysql://localhost/tasker"
            [common.database.pool]
            max_connections = 0
            [worker.web]
            bind_address = "localhost"
            enabled = "yes"
            [worker.mpsc_channels.handler_dispatch.load_shedding]
            capacity_threshold_percent = 150
            """)
        #expect(
            error.issues.map(\.description).sorted() == [
                "\(file): common.database.pool.max_connections = 0: must be between 1 and 1000",
                "\(file): common.database.url = \"mysql://localhost/tasker\": must be a postgres:// or postgresql:// URL",
                "\(file): worker.mpsc_channels.handler_dispatch.load_shedding.capacity_threshold_percent = 150.0: must be between 1.0 and 100.0",
                "\(file): worker.web.bind_address = \"localhost\": must be host:port with a port from 0 to 65535",
                "\(file): worker.web.enabled = \"yes\": wrong type: expected a boolean, found a string",
            ])
        #expect(error.description.hasPrefix("invalid configuration (5 errors):\n  - "))
    }

    @Test func errorsNameTheOverlayThatSetTheValue() throws {
        try withTemporaryDirectory { dir in
            let base = try writeFile(dir, "base.toml", "[worker.grpc]\nmax_frame_size = 20000\n")
            let overlay = try writeFile(dir, "overlay.toml", "[worker.grpc]\nmax_frame_size = 100\n")
            let error = #expect(throws: ConfigurationLoadError.self) {
                try ConfigurationLoader(environment: [:]).load(files: [base, overlay])
            }
            #expect(
                error?.issues.map(\.description) == ["\(overlay): worker.grpc.max_frame_size = 100: must be between 16384 and 16777215"])
        }
    }

    @Test func syntaxErrorNamesFileAndLine() throws {
        let (error, file) = try loadError("[worker]\nworker_id = \n")
        #expect(error.issues.count == 1)
        #expect(error.issues.first?.file == file)
        #expect(error.issues.first?.problem.hasPrefix("invalid TOML at line 2") == true)
    }

    @Test func missingFileIsAnError() throws {
        let error = #expect(throws: ConfigurationLoadError.self) {
            try ConfigurationLoader(environment: ["TASKER_CONFIG_PATH": "/nonexistent/worker.toml"]).load()
        }
        #expect(error?.issues.map(\.description) == ["/nonexistent/worker.toml: file not found"])
    }
}
