import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerPostgres
@testable import TaskerWorker

/// The worker runs under the least-privilege role of `scripts/sql/worker-role.sql` (README,
/// "Security and limits"): not a superuser, not the schemas' owner. The schema, the templates'
/// queues and the tasks are made by the owner (the test cluster's superuser), as a deployment
/// where `migrate` and the orchestration run as another role does.
@Suite("Worker under the least-privilege role", .timeLimit(.minutes(2)))
struct WorkerRoleTests {
    static let yaml = """
        name: role_flow
        namespace_name: least_privilege
        version: 1.0.0
        steps:
          - name: first
            handler: { callable: tasker.echo }
          - name: second
            dependencies: [first]
            handler: { callable: tasker.noop }
        """

    /// The grant script with its psql variable replaced by the quoted role name.
    static func grantScript(for role: String) throws -> String {
        let path = "\(TestEnvironment.repositoryRoot)/scripts/sql/worker-role.sql"
        return try String(contentsOfFile: path, encoding: .utf8)
            .replacingOccurrences(of: #":"worker_role""#, with: "\"\(role)\"")
    }

    @Test("runs steps end to end with only the documented grants, and is refused anything beyond them")
    func runsWithTheDocumentedGrants() async throws {
        let role = "tasker_worker_\(UUID().uuidString.prefix(8).lowercased())"
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            try await harness.admin.execute("CREATE ROLE \"\(role)\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
            try await harness.admin.execute(try Self.grantScript(for: role))

            var configuration = harness.configuration()
            configuration.common.database.url = try Self.url(db.url, user: role)
            let worker = harness.startWorker(HandlerRegistry.withBuiltIns(), configuration: configuration)
            do {
                let task = try await harness.createTask(
                    steps: ["first", "second"], edges: [("first", "second")],
                    context: .object(["who": "least privilege"]))
                try await harness.enqueue(task, "first")
                try await harness.waitForState(task["first"], ["enqueued_for_orchestration"])
                #expect(try await harness.result(task["first"]).success)
                try await harness.completeLikeOrchestration(task, "first")
                try await harness.enqueue(task, "second")
                try await harness.waitForState(task["second"], ["enqueued_for_orchestration"])
                #expect(try await harness.result(task["second"]).success)

                // The grants are really the limit: the role cannot drop or delete what it does not own.
                let asWorker = try await PostgresConnection.connect(
                    url: try Self.url(db.url, user: role),
                    applicationName: "tasker-role-test")
                await #expect(throws: PostgresError.self) {
                    try await asWorker.execute("DELETE FROM tasker.tasks")
                }
                await #expect(throws: PostgresError.self) {
                    try await asWorker.execute("DROP TABLE pgmq.q_worker_least_privilege_queue")
                }
                await asWorker.close()
            } catch {
                try? await worker.stop()
                throw error
            }
            try await worker.stop()
            await harness.admin.close()
        }
        // The test database is gone, and with it the role's grants; the role itself is cluster-wide.
        let cluster = try await PostgresConnection.connect(url: try TestEnvironment.adminURL())
        try await cluster.execute("DROP ROLE IF EXISTS \"\(role)\"")
        await cluster.close()
    }

    /// `url` with its user replaced (the test cluster trusts loopback connections).
    static func url(_ url: String, user: String) throws -> String {
        guard var components = URLComponents(string: url) else {
            throw TestSetupError("not a URL: \(url)")
        }
        components.user = user
        components.password = nil
        return try #require(components.string)
    }
}
