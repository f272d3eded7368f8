import Foundation
import TaskerOrchestration
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// README's "Your first handler" with a toolchain and a database: the example's manifest evaluates, and
/// its template (handlers compiled through the link `FirstHandler/ChargeCard.swift` to the package's
/// file) runs through a real worker and the companion orchestration as it describes. (That README shows
/// the package's files and that the handlers do what it says: `ReadmeWalkthroughTests` in TaskerWorkerTests.)
@Suite("README first handler")
struct ReadmeExampleTests {
    @Test("the example's manifest evaluates: the executable and test targets on this repository's products")
    func theExampleManifestEvaluates() async throws {
        let outcome = try await Subprocess.run(
            "/usr/bin/env", ["swift", "package", "dump-package", "--package-path", Repo.firstHandlerExample],
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
                == [
                    "TaskerHandlerHost@tasker-worker-swift", "TaskerHandlerSDK@tasker-worker-swift",
                    "TaskerWorkerTesting@tasker-worker-swift",
                ])
    }

    @Test("payments/checkout runs as the walk-through says: results of both steps; a bad amount ends in error")
    func checkoutRunsEndToEnd() async throws {
        let yaml = try String(contentsOfFile: Repo.firstHandlerExample + "/tasks/payments/checkout.yaml", encoding: .utf8)
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
