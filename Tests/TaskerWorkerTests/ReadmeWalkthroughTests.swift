import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// README's "Your first handler" without a toolchain or a database: its code blocks are the files of
/// `Examples/first-handler/` (so the walk-through and the package stay one), and the handlers
/// (`FirstHandler/ChargeCard.swift` is a link to the package's file) do what it says. The manifest and
/// the template's run through a real worker and the companion orchestration: `ReadmeExampleTests` in
/// TaskerSystemTests.
@Suite("README first handler walk-through")
struct ReadmeWalkthroughTests {
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
            let text = try String(contentsOfFile: Repo.firstHandlerExample + "/" + file, encoding: .utf8)
            #expect(blocks.contains(text), "README's walk-through does not show \(file) as it is")
        }
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
}
