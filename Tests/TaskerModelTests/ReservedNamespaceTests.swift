import TaskerTestSupport
import Testing

@testable import TaskerModel

/// The namespace `orchestration` is refused at template load (issue #11, item 2). (Poison and misrouted
/// messages in a running worker: `PoisonAndMisroutingTests` in TaskerSystemTests.)
@Suite("Poison and misrouted messages: reserved namespace", .timeLimit(.minutes(3)))
struct ReservedNamespaceTests {
    static let reserved = """
        name: sneaky
        namespace_name: orchestration
        version: 1.0.0
        steps:
          - name: work
            handler: { callable: tasker.noop }
        """

    @Test func theNamespaceOrchestrationIsRefusedAtTemplateLoad() throws {
        let loaded = try withTemporaryDirectory { directory in
            TaskTemplateLoader().loadFile(atPath: try writeFile(directory, "reserved.yaml", Self.reserved))
        }
        guard case .failure(let failure) = loaded else {
            Issue.record("a template in namespace orchestration was accepted")
            return
        }
        let problem = try #require(failure.problems.first)
        #expect(problem.description.contains("reserved.yaml"))
        #expect(problem.message.contains(#"namespace "orchestration" is reserved"#))
    }
}
