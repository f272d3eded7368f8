import Foundation
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration

/// Issue #31 item 7: a task's steps are listed in dependency order (`GET …/workflow_steps`, and so
/// `tasker-dev task show` and the console), not in the order the template happened to list them.
@Suite(.timeLimit(.minutes(3))) struct TaskStepOrderTests {
    /// A chain listed backwards, and a step beside it with no parent: created in this order, so creation
    /// order alone would list `last` first.
    static let backwards = """
        name: listed_backwards
        namespace_name: examples
        version: 1.0.0
        steps:
          - name: last
            dependencies: [middle]
            handler: { callable: tasker.noop }
          - name: middle
            dependencies: [first]
            handler: { callable: tasker.noop }
          - name: first
            handler: { callable: tasker.noop }
          - name: alone
            handler: { callable: tasker.noop }
        """

    @Test func stepsAreListedParentsFirst() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db, extra: ["listed_backwards.yaml": Self.backwards])
            let task = try await harness.submittedTask("listed_backwards", ["order": "check"]).taskUUID
            let pool = db.pool(maxConnections: 2)
            let queries = TaskQueries(pool: pool, orchestration: OrchestrationService(pool: pool, databaseURL: db.url))
            let answer = try #require(try await queries.steps(task))
            await pool.close()
            let steps = try UntrustedJSON.decode(JSONValue.self, from: answer, what: "steps")
            guard case .array(let rows) = steps else {
                Issue.record("not an array: \(steps)")
                return
            }
            let names = rows.compactMap { $0["name"]?.stringValue }
            // Each step after its parents, and each level after the one above (the roots, `first` and
            // `alone`, in either order: rows created in one statement have no order of their own).
            let position = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) })
            #expect(Set(names) == ["first", "alone", "middle", "last"], "\(names)")
            #expect(position["first", default: 9] < position["middle", default: -1], "\(names)")
            #expect(position["alone", default: 9] < position["middle", default: -1], "\(names)")
            #expect(position["middle", default: 9] < position["last", default: -1], "\(names)")
        }
    }
}
