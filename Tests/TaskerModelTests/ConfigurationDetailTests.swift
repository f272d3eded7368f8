import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

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
