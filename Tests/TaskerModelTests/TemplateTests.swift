import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Template decoding (YAML aliases and defaults), the upstream JSON shape, and loader validation.
@Suite("Task templates: model and loader")
struct TemplateTests {
    static let fixtures = TestEnvironment.repositoryRoot + "/Tests/Fixtures/templates"

    static func loadFixture(_ relative: String) throws -> TaskTemplate {
        let text = try String(contentsOfFile: fixtures + "/" + relative, encoding: .utf8)
        return try TemplateYAML.decodeTemplate(text)
    }

    @Test func yamlDecodingAcceptsAliasesAndFillsDefaults() throws {
        let template = try Self.loadFixture("valid/linear_with_events.yaml")
        #expect(template.identifier == "fixture_ns/fixture_linear/2.1.0")
        #expect(template.systemDependencies == SystemDependencies(primary: "default", secondary: []))
        #expect(template.metadata?.tags == ["fixture", "linear"])
        #expect(template.metadata?.documentationURL == nil)
        #expect(template.steps.map(\.name) == ["fetch", "transform", "store"])

        let fetch = try #require(template.step(named: "fetch"))
        #expect(fetch.type == .standard)
        #expect(fetch.dependencies.isEmpty)
        #expect(fetch.retry == .default)
        #expect(fetch.retry.backoffBaseMs == 1000 && fetch.retry.maxBackoffMs == 30000)
        #expect(fetch.timeoutSeconds == 15)
        // YAML 1.2 typing: quoted numbers and `yes` stay strings.
        #expect(
            fetch.handler.initialization
                == .object([
                    "url": .string("8080"), "enabled": .string("yes"),
                    "retries": .int(2),
                ]))
        #expect(fetch.handler.effectiveMethod == "call")

        let transform = try #require(template.step(named: "transform"))
        #expect(transform.dependencies == ["fetch"])  // depends_on
        #expect(transform.handler.method == "transform")
        #expect(transform.handler.initialization == .emptyObject)
        // A partial retry block gets field defaults, not the block default.
        #expect(transform.retry == RetryConfiguration(retryable: true, maxAttempts: 5, backoff: .linear))
        #expect(transform.publishesEvents.count == 2)
        #expect(transform.publishesEvents[0].condition == .success)
        #expect(transform.publishesEvents[0].deliveryMode == .broadcast)
        #expect(transform.publishesEvents[1].condition == .failure)
        #expect(transform.publishesEvents[1].deliveryMode == .durable)
        #expect(transform.publishesEvents[1].schema == nil)

        let store = try #require(template.step(named: "store"))
        #expect(store.retry.maxAttempts == 0)  // accepted, as upstream
        #expect(store.resultSchema == .object(["type": .string("object")]))
        #expect(template.environments["test"]?.steps.first?.timeoutSeconds == 5)
        #expect(template.lifecycle == LifecycleConfiguration(maxDurationMinutes: 30))

        let batch = try Self.loadFixture("valid/batch_pipeline.yml")
        #expect(batch.version == "1.0")
        #expect(batch.steps.map(\.type) == [.batchable, .batchWorker, .deferredConvergence, .decision])
        #expect(batch.step(named: "work")?.batchConfig?.failureStrategy == .isolate)
    }

    @Test func encodingWritesUpstreamSerdeShape() throws {
        let template = try Self.loadFixture("valid/linear_with_events.yaml")
        let json = try template.jsonValue()
        // Optional fields are written as null, except result_schema and composition (skipped).
        #expect(json["description"] == .string("Three steps in a row"))
        #expect(json["metadata"]?["documentation_url"] == .null)
        #expect(json["metadata"]?["updated_at"] == .null)
        #expect(json["metadata"]?["unknown_metadata_key"] == nil)
        #expect(json["lifecycle"]?["staleness_action"] == .string("dlq"))
        #expect(json["lifecycle"]?["auto_dlq_on_timeout"] == .null)
        guard case .array(let steps)? = json["steps"] else {
            Issue.record("no steps")
            return
        }
        let fetch = steps[0]
        #expect(fetch["type"] == .string("standard"))
        #expect(fetch["step_type"] == nil && fetch["depends_on"] == nil)
        #expect(fetch["description"] == .null)
        #expect(fetch["system_dependency"] == .null)
        #expect(fetch["batch_config"] == .null)
        #expect(fetch["handler"]?["method"] == .null)
        #expect(
            fetch["retry"]
                == .object([
                    "retryable": .bool(true), "max_attempts": .int(3),
                    "backoff": .string("exponential"), "backoff_base_ms": .int(1000),
                    "max_backoff_ms": .int(30000),
                ]))
        #expect(fetch["result_schema"] == nil && fetch["composition"] == nil)
        #expect(steps[1]["dependencies"] == .array([.string("fetch")]))
        #expect(steps[1]["retry"]?["backoff_base_ms"] == .null)
        if case .array(let events)? = steps[1]["publishes_events"] {
            #expect(
                events[1]
                    == .object([
                        "name": .string("fixture.failed"), "description": .string("Failed"),
                        "condition": .string("failure"), "schema": .null,
                        "delivery_mode": .string("durable"), "publisher": .null,
                    ]))
        }
        #expect(steps[2]["result_schema"] == .object(["type": .string("object")]))
        #expect(try TaskTemplate.fromJSON(json) == template)
    }

    @Test func upstreamConfigurationRoundTripsUnchanged() throws {
        let text = try String(contentsOfFile: Self.fixtures + "/upstream_configuration.json", encoding: .utf8)
        let original = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        let template = try TaskTemplate.fromJSON(original)
        #expect(template.steps[1].type == .batchWorker)
        #expect(template.steps[1].batchConfig?.failureStrategy == .continueOnFailure)
        #expect(template.environments["test"]?.steps.first?.handler?.initialization == .object(["k": .string("v")]))
        #expect(try template.jsonValue() == original)
        #expect(try TaskTemplate.fromJSON(text: template.jsonString()) == template)
    }

    @Test func everyInvalidFixtureIsReportedWithItsFileAndStepWhileValidOnesLoad() throws {
        let loader = TaskTemplateLoader(
            environment: ["TASKER_TEMPLATE_PATH": Self.fixtures],
            workingDirectory: TestEnvironment.repositoryRoot)
        let report = loader.loadAll()
        let prefix = "Tests/Fixtures/templates/"
        #expect(report.directory == Self.fixtures)
        #expect(
            report.templates.map(\.file) == [
                prefix + "valid/batch_pipeline.yml",
                prefix + "valid/linear_with_events.yaml",
            ])
        #expect(report.namespaces == ["fixture_ns"])

        func problems(_ file: String) -> [TemplateProblem] { report.problems.filter { $0.file == prefix + file } }
        func expectProblem(
            _ file: String, step: String?, containing text: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            let found = problems(file)
            #expect(
                found.contains { $0.step == step && $0.message.contains(text) },
                "\(file): \(found.map(\.description))", sourceLocation: sourceLocation)
        }
        expectProblem("invalid/unknown_dependency.yaml", step: "fetch", containing: "unknown step \"nope\"")
        expectProblem("invalid/dependency_cycle.yaml", step: "a", containing: "cycle")
        expectProblem("invalid/duplicate_step.yaml", step: "twice", containing: "duplicate step name")
        expectProblem("invalid/empty_callable.yaml", step: "blank", containing: "handler.callable is empty")
        expectProblem("invalid/decision_without_parent.yaml", step: "choose", containing: "at least one dependency")
        expectProblem("invalid/zero_timeout.yaml", step: "instant", containing: "timeout_seconds")
        expectProblem("invalid/negative_max_attempts.yaml", step: "retrying", containing: "retry.max_attempts")
        expectProblem(
            "invalid/batch_worker_template_not_batch_worker.yaml", step: "plan",
            containing: "not batch_worker")
        expectProblem(
            "invalid/batch_config_incomplete.yaml", step: "work",
            containing: "batch_config.failure_strategy: missing field")
        expectProblem("invalid/bad_event_condition.yaml", step: "emit", containing: "publishes_events[0].condition")
        expectProblem("invalid/bad_delivery_mode.yaml", step: "emit", containing: "publishes_events[0].delivery_mode")
        expectProblem("invalid/event_without_schema.yaml", step: "emit", containing: "schema")
        expectProblem("invalid/bad_step_type.yaml", step: "odd", containing: "type")
        expectProblem("invalid/bad_namespace.yaml", step: nil, containing: "namespace \"bad-namespace\"")
        expectProblem("invalid/long_namespace.yaml", step: nil, containing: "at most 29 characters")
        expectProblem("invalid/empty_name.yaml", step: nil, containing: "template name is empty")
        expectProblem("invalid/syntax_error.yaml", step: nil, containing: "invalid YAML")
        expectProblem("invalid/two_documents.yaml", step: nil, containing: "2 YAML documents")
        expectProblem(
            "zz_duplicates/linear_again.yaml", step: nil,
            containing: "already defined in \(prefix)valid/linear_with_events.yaml")
        // Nothing from a bad file leaks into the templates; every bad file is reported.
        let invalidFiles = try FileManager.default.contentsOfDirectory(atPath: Self.fixtures + "/invalid")
        for file in invalidFiles { #expect(!problems("invalid/" + file).isEmpty, "\(file) not reported") }

        let problem = try #require(problems("invalid/unknown_dependency.yaml").first)
        #expect(
            problem.description
                == "\(prefix)invalid/unknown_dependency.yaml: step \"fetch\": depends on unknown step \"nope\"")
    }

    @Test func templateDirectoryPrecedence() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("tpl-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let explicit = root + "/explicit"
        let workspace = root + "/workspace"
        let cwd = root + "/cwd"
        for dir in [explicit, workspace + "/config/tasks", cwd + "/config/tasks"] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        }
        func directory(_ env: [String: String]) -> String? {
            TaskTemplateLoader(environment: env, workingDirectory: cwd).templateDirectory()
        }
        #expect(directory(["TASKER_TEMPLATE_PATH": explicit, "WORKSPACE_PATH": workspace]) == explicit)
        #expect(
            directory(["TASKER_TEMPLATE_PATH": root + "/missing", "WORKSPACE_PATH": workspace])
                == workspace + "/config/tasks")
        #expect(directory(["WORKSPACE_PATH": root + "/missing"]) == cwd + "/config/tasks")
        #expect(directory(["TASKER_TEMPLATE_PATH": "../explicit"]) == explicit)  // relative to the cwd
        #expect(TaskTemplateLoader(environment: [:], workingDirectory: root).templateDirectory() == nil)
        #expect(TaskTemplateLoader(environment: [:], workingDirectory: root).loadAll() == TemplateLoadReport())
    }

    @Test func diagnosticsTemplateLoads() throws {
        let loader = TaskTemplateLoader(environment: [:], workingDirectory: TestEnvironment.repositoryRoot)
        #expect(loader.templateDirectory() == TestEnvironment.repositoryRoot + "/config/tasks")
        let report = loader.loadAll()
        #expect(report.problems.isEmpty, "\(report.problems)")
        let smoke = try #require(report.templates.first { $0.template.name == "smoke_test" }?.template)
        #expect(smoke.namespaceName == "diagnostics" && smoke.version == "1.0.0")
        #expect(smoke.steps.map(\.handler.callable) == ["tasker.noop", "tasker.echo", "tasker.sleep"])
        #expect(smoke.step(named: "echo")?.dependencies == ["noop"])
        #expect(smoke.step(named: "sleep")?.handler.initialization == .object(["ms": .int(10)]))
    }
}
