import Foundation
import TaskerOrchestration
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// README's "Your first handler": its code blocks are the files of `Examples/first-handler/` (so the
/// walk-through and the package stay one), the handlers (`FirstHandler/ChargeCard.swift` is a link
/// to the package's file) do what it says, and the template runs through a real worker and the
/// companion orchestration as it describes.
@Suite("README first handler")
struct ReadmeExampleTests {
    static let example = TestEnvironment.repositoryRoot + "/Examples/first-handler"

    /// The fenced code blocks of README's "Your first handler" section.
    static func walkthroughBlocks() throws -> [String] {
        let readme = try String(contentsOfFile: TestEnvironment.repositoryRoot + "/README.md", encoding: .utf8)
        let start = try #require(readme.range(of: "\n## Your first handler\n"))
        let rest = readme[start.upperBound...]
        let section = rest[..<(rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex)]
        var blocks: [String] = []
        var current: [Substring]?
        for line in section.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                if let lines = current {
                    blocks.append(lines.joined(separator: "\n") + "\n")
                    current = nil
                } else {
                    current = []
                }
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    @Test("every file of Examples/first-handler appears verbatim in the README walk-through")
    func readmeShowsThePackagesFiles() throws {
        let blocks = try Self.walkthroughBlocks()
        for file in [
            "Package.swift", "Sources/PaymentsWorker/ChargeCard.swift", "Sources/PaymentsWorker/main.swift",
            "tasks/payments/checkout.yaml", "Tests/PaymentsWorkerTests/ChargeCardTests.swift",
        ] {
            let text = try String(contentsOfFile: Self.example + "/" + file, encoding: .utf8)
            #expect(blocks.contains(text), "README's walk-through does not show \(file) as it is")
        }
    }

    @Test("the example's manifest evaluates: the executable and test targets on this repository's products")
    func theExampleManifestEvaluates() async throws {
        let outcome = try await Subprocess.run(
            "/usr/bin/env", ["swift", "package", "dump-package", "--package-path", Self.example],
            environment: ProcessInfo.processInfo.environment, timeout: .seconds(180))
        #expect(outcome.status == 0, "\(outcome)")
        let manifest = try JSONDecoder().decode(JSONValue.self, from: Data(outcome.stdout.utf8))
        guard case .array(let targets)? = manifest["targets"] else {
            Issue.record("no targets in \(outcome.stdout)")
            return
        }
        #expect(targets.compactMap { $0["name"]?.stringValue }.sorted() == ["PaymentsWorker", "PaymentsWorkerTests"])
        // Every product dependency is one of this repository's products, by the name the README uses.
        var products: [String] = []
        for target in targets {
            guard case .array(let dependencies)? = target["dependencies"] else { continue }
            for dependency in dependencies {
                if case .array(let product)? = dependency["product"], product.count >= 2 {
                    products.append("\(product[0].stringValue ?? "?")@\(product[1].stringValue ?? "?")")
                }
            }
        }
        #expect(
            products.sorted()
                == ["TaskerWorker@tasker-worker-swift", "TaskerWorker@tasker-worker-swift", "TaskerWorkerTesting@tasker-worker-swift"])
    }

    static func context(_ taskContext: JSONValue) -> StepContext {
        StepContext(
            taskUUID: UUID(), stepUUID: UUID(), correlationID: UUID(), namespace: "payments",
            taskName: "checkout", taskVersion: "1.0.0", stepName: "charge_card", templateStepName: "charge_card",
            taskContext: taskContext, stepInputs: .null, stepConfig: ["currency": "EUR"], dependencyResults: [:])
    }

    @Test("charge_card charges a positive amount and refuses the rest for good")
    func chargesAPositiveAmountAndRejectsTheRest() async throws {
        let charged = try await ChargeCard().call(Self.context(["amount": 2500]))
        #expect(charged.result == ["charged": 2500, "currency": "EUR"])
        let rejected = try await ChargeCard().call(Self.context(["amount": -1]))
        #expect(rejected.failure?.retryable == false)
    }

    @Test("payments/checkout runs as the walk-through says: results of both steps; a bad amount ends in error")
    func checkoutRunsEndToEnd() async throws {
        let yaml = try String(contentsOfFile: Self.example + "/tasks/payments/checkout.yaml", encoding: .utf8)
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db, extra: ["checkout.yaml": yaml])
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("payments.charge_card", ChargeCard())
            handlers.register("payments.send_receipt", SendReceipt())
            let worker = harness.startWorker(handlers)
            let orchestration = harness.startOrchestration()
            func submit(_ context: JSONValue) async throws -> UUID {
                try await orchestration.submit(
                    TaskRequest(
                        namespace: "payments", name: "checkout", version: "1.0.0", context: context,
                        initiator: "readme", sourceSystem: "tests", reason: "README walk-through")
                ).taskUUID
            }
            let good = try await submit(["amount": 2500])
            #expect(try await harness.waitForTask(good, in: ["complete", "error"]) == "complete")
            #expect(try await harness.result(good, "charge_card").result == ["charged": 2500, "currency": "EUR"])
            #expect(try await harness.result(good, "send_receipt").result == ["receipt": "charged 2500 EUR"])

            let bad = try await submit(["amount": -1])
            #expect(try await harness.waitForTask(bad, in: ["complete", "error"]) == "error")
            #expect(try await harness.result(bad, "charge_card").success == false)
            #expect(try await harness.stepTransitions(bad, "send_receipt").allSatisfy { $0 != "in_progress" })
            try await orchestration.stop()
            try await worker.stop()
        }
    }
}
