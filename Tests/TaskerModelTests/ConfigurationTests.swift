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

@Suite("Configuration: decoding details and redaction")
struct ConfigurationDetailTests {
    /// `config check` writes strings with the one JSON/TOML escaping (`StringEscaping.jsonQuoted`):
    /// every control character escaped (DEL and C1 too, which TOML forbids raw), so the text reads
    /// back as the same value.
    @Test func renderedStringsAreTOMLThatReadsBack() throws {
        let text = "a\"b\\c\nd\te\u{1}f\u{7F}g\u{85}h\u{2028}i é"
        let rendered = ConfigValue.string(text).rendered
        #expect(rendered == #""a\"b\\c\nd\te\u0001f\u007fg\u0085h\u2028i é""#)
        #expect(try ConfigValue.parse(toml: "k = \(rendered)\n").tableValue?["k"] == .string(text))
    }

    @Test func integersAreAcceptedForFloatKeysAndOldNamesStillWork() throws {
        try withTemporaryDirectory { dir in
            let file = try writeFile(
                dir, "c.toml",
                """
                [worker.mpsc_channels.handler_dispatch.load_shedding]
                capacity_threshold_percent = 90
                [common.circuit_breakers.component_configs.pgmq]
                failure_threshold = 9
                [common._docs.anything]
                description = "ignored"
                [orchestration.web]
                enabled = true
                """)
            let loaded = try ConfigurationLoader(environment: [:]).load(file: file)
            #expect(loaded.configuration.worker.mpscChannels.handlerDispatch.loadShedding.capacityThresholdPercent == 90.0)
            #expect(loaded.configuration.common.circuitBreakers.componentConfigs.messaging.failureThreshold == 9)
            #expect(loaded.warnings.map(\.keyPath) == ["common.circuit_breakers.component_configs.pgmq"])
        }
    }

    @Test func apiKeyEntriesDecodeWithDefaults() throws {
        try withTemporaryDirectory { dir in
            let file = try writeFile(
                dir, "c.toml",
                """
                [[worker.web.auth.api_keys]]
                key = "sk-one"
                permissions = ["tasks:read"]
                [[worker.web.auth.api_keys]]
                key = ""
                """)
            let error = #expect(throws: ConfigurationLoadError.self) {
                try ConfigurationLoader(environment: [:]).load(file: file)
            }
            #expect(error?.issues.map(\.description) == ["\(file): worker.web.auth.api_keys[1].key = \"\": must not be empty"])
            let good = try writeFile(dir, "good.toml", "[[worker.web.auth.api_keys]]\nkey = \"sk-one\"\n")
            let keys = try ConfigurationLoader(environment: [:]).load(file: good).configuration.worker.web.auth.apiKeys
            #expect(keys == [WorkerConfiguration.APIKey(key: "sk-one", permissions: [])])
        }
    }

    @Test func aRabbitMQURLTheClientCannotUseIsRefusedWithItsFileAndKeyPathAndNoPassword() throws {
        try withTemporaryDirectory { dir in
            let file = try writeFile(
                dir, "bad.toml", "[common.queues.rabbitmq]\nurl = \"amqp://tasker:hunter2@broker:99999/%2F\"\n")
            let error = #expect(throws: ConfigurationLoadError.self) {
                try ConfigurationLoader(environment: [:]).load(file: file)
            }
            #expect(
                error?.issues.map(\.description) == [
                    "\(file): common.queues.rabbitmq.url = \"amqp://tasker:***@broker:99999/%2F\": port '99999' is not 1…65535"
                ])
            // Upstream's amqps:// is accepted here (the worker refuses it when it connects: no TLS).
            let tls = try writeFile(dir, "tls.toml", "[common.queues.rabbitmq]\nurl = \"amqps://broker:5671/%2F\"\n")
            #expect(try ConfigurationLoader(environment: [:]).load(file: tls).configuration.common.queues.rabbitmq.url.hasPrefix("amqps"))
        }
    }

    @Test func renderingRedactsSecrets() throws {
        var config = TaskerConfiguration()
        config.common.database.url = "postgresql://tasker:hunter2@db:5432/tasker"
        config.common.queues.rabbitmq.url = "amqp://guest:guest@localhost:5672/%2F"
        config.worker.web.auth.apiKey = "sk-legacy-secret"
        config.worker.web.auth.jwtPublicKey = "-----BEGIN PUBLIC KEY-----\nabc\n-----END PUBLIC KEY-----"
        config.worker.web.auth.apiKeys = [.init(key: "sk-listed-secret", permissions: ["*"])]
        let text = config.renderRedacted()
        #expect(text.contains("postgresql://tasker:***@db:5432/tasker"))
        #expect(text.contains("amqp://guest:***@localhost:5672/%2F"))
        for secret in ["hunter2", "sk-legacy-secret", "sk-listed-secret", "BEGIN PUBLIC KEY", ":guest@"] {
            #expect(!text.contains(secret), "\(secret) leaked")
        }
        #expect(text.contains("max_concurrent_handlers = 10"))
        #expect(text.contains("[worker.mpsc_channels.handler_dispatch]"))
        #expect(config.renderRedactedJSON().contains("tasker:***@db"))
    }

    @Test func redactedOutputLoadsBackToTheSameConfiguration() throws {
        try withTemporaryDirectory { dir in
            var config = TaskerConfiguration()
            config.common.queues.rabbitmq.url = "amqp://localhost:5672/%2F"  // no password to redact
            config.worker.web.auth.apiKeys = [.init(key: "", permissions: ["*"])]
            config.worker.web.auth.apiKeys[0].key = "k"
            let file = try writeFile(dir, "rendered.toml", config.renderRedacted().replacingOccurrences(of: "\"***\"", with: "\"k\""))
            let loaded = try ConfigurationLoader(environment: [:]).load(file: file)
            #expect(loaded.configuration == config)
            #expect(loaded.warnings.isEmpty)
        }
    }

    @Test func errorValuesAreRedacted() throws {
        let (error, _) = try loadError("[common.database]\nurl = \"mysql://root:topsecret@db/x\"\n")
        #expect(error.issues.first?.value == "\"mysql://root:***@db/x\"")
    }

    @Test func checkCommandReportsAndExits() throws {
        try withTemporaryDirectory { dir in
            let bad = try writeFile(dir, "bad.toml", "[worker.mpsc_channels.handler_dispatch]\nmax_concurrent_handlers = 0\n")
            let failed = ConfigurationCheck.run(file: bad, loader: ConfigurationLoader(environment: [:]))
            #expect(failed.exitCode == 1)
            #expect(failed.output.contains("worker.mpsc_channels.handler_dispatch.max_concurrent_handlers = 0"))
            let ok = ConfigurationCheck.run(
                loader: ConfigurationLoader(
                    environment: ["DATABASE_URL": "postgresql://u:pw@h/db"], configRoot: repositoryConfigRoot))
            #expect(ok.exitCode == 0)
            #expect(ok.output.contains("# environment: development"))
            #expect(ok.output.contains("url = \"postgresql://u:***@h/db\""))
        }
    }
}

@Suite("Configuration: schema coverage")
struct ConfigurationSchemaTests {
    @Test func everyNumericKeyHasARangeAndEveryRuleHasAKey() {
        let rulePaths = Set(ConfigurationSchema.rules.map(\.path))
        var unchecked: [String] = []
        ConfigurationSchema.defaults.forEachLeaf { path, value in
            switch value {
            case .integer, .float:
                if !rulePaths.contains(path) { unchecked.append(path) }
            case .array(let items) where items.first.map({ if case .integer = $0 { true } else { false } }) == true:
                if !rulePaths.contains(path + "[]") { unchecked.append(path) }
            default: break
            }
        }
        #expect(unchecked == [])
        for path in rulePaths {
            let base = String(path.split(separator: "[").first!)
            #expect(ConfigurationSchema.defaults.value(atPath: base) != nil, "rule for unknown key \(path)")
        }
    }

    @Test func keySpellingsRoundTrip() {
        ConfigurationSchema.defaults.forEachLeaf { path, _ in
            for key in path.split(separator: ".") {
                #expect(KeySpelling.snakeCase(KeySpelling.camelCase(String(key))) == String(key))
            }
        }
    }

    @Test func defaultsPassValidation() {
        #expect(ConfigurationChecker.validate(ConfigurationSchema.defaults, source: { _ in nil }, skipping: []).isEmpty)
    }

    @Test func bindAddresses() {
        for good in ["0.0.0.0:8081", "localhost:0", "[::]:9191", "[::1]:65535"] {
            #expect(BindAddress.isValid(good), "\(good)")
        }
        for bad in [
            "localhost", ":80", "host:", "host:70000", "::1:80", "host:8o", "host:+80", "[]:80", "[::1]80",
            "ho st:80", "host:-1", " host:80",
        ] {
            #expect(!BindAddress.isValid(bad), "\(bad)")
        }
    }

    @Test func bindAddressParts() throws {
        let v4 = try BindAddress(parsing: "0.0.0.0:8081")
        #expect(v4 == BindAddress(host: "0.0.0.0", port: 8081) && !v4.isIPv6 && v4.description == "0.0.0.0:8081")
        let v6 = try BindAddress(parsing: "[::1]:65535")
        #expect(v6 == BindAddress(host: "::1", port: 65535) && v6.isIPv6 && v6.description == "[::1]:65535")
        let name = try BindAddress(parsing: "worker.internal:0")
        #expect(name == BindAddress(host: "worker.internal", port: 0) && !name.isIPv6)
        #expect(throws: BindAddress.Invalid(value: "localhost")) { try BindAddress(parsing: "localhost") }
    }
}
