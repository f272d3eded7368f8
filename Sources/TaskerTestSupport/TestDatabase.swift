import Foundation
import Logging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// A fresh database for one test, cloned from the migrated template database.
public struct TestDatabase: Sendable {
    /// Database name (`tasker_test_<random>`).
    public let name: String
    /// URL connecting to it as the cluster's test role.
    public let url: String

    /// Opens a new connection to this database.
    public func connect(applicationName: String = "tasker-test") async throws -> PostgresConnection {
        try await PostgresConnection.connect(url: url, applicationName: applicationName)
    }

    /// A pool on this database.
    public func pool(
        maxConnections: Int = 4, minConnections: Int = 0,
        acquireTimeout: Duration = .seconds(5)
    ) -> PostgresConnectionPool {
        PostgresConnectionPool(
            configuration: PostgresPoolConfiguration(
                url: url, maxConnections: maxConnections, minConnections: minConnections,
                acquireTimeout: acquireTimeout, applicationName: "tasker-test-pool"))
    }
}

/// Runs `body` with a fresh database cloned from the migrated template (`CREATE DATABASE … TEMPLATE`,
/// about 0.1 s), and drops it afterwards. Tests can run in parallel: each has its own database.
///
/// Needs `TASKER_TEST_DATABASE_URL` (a superuser URL of a running cluster; `scripts/test` sets it).
public func withTestDatabase<T: Sendable>(_ body: (TestDatabase) async throws -> T) async throws -> T {
    try await withClonedDatabase(template: nil, body)
}

/// Runs `body` with the two databases of a deployment whose queues have a database of their own
/// (`[common.pgmq_database]`): `tasks` cloned from a template migrated as a task database (no PGMQ),
/// `queues` from one migrated as a queue database (PGMQ and its helpers only). Both are dropped after.
public func withQueueDatabaseTestDatabases<T: Sendable>(
    _ body: (_ tasks: TestDatabase, _ queues: TestDatabase) async throws -> T
) async throws -> T {
    TestLogFiles.install()
    let tasks = try await TestCluster.shared.createDatabase(scope: .taskDatabase)
    let queues: TestDatabase
    do {
        queues = try await TestCluster.shared.createDatabase(scope: .queueDatabase)
    } catch {
        await TestCluster.shared.dropDatabase(tasks.name)
        throw error
    }
    do {
        let value = try await body(tasks, queues)
        await TestCluster.shared.dropDatabase(queues.name)
        await TestCluster.shared.dropDatabase(tasks.name)
        return value
    } catch {
        await TestCluster.shared.dropDatabase(queues.name)
        await TestCluster.shared.dropDatabase(tasks.name)
        throw error
    }
}

/// Runs `body` with an empty database (no PGMQ, no schema), for migration tests.
public func withEmptyTestDatabase<T: Sendable>(_ body: (TestDatabase) async throws -> T) async throws -> T {
    try await withClonedDatabase(template: "template0", body)
}

private func withClonedDatabase<T: Sendable>(template: String?, _ body: (TestDatabase) async throws -> T) async throws -> T {
    TestLogFiles.install()
    let database = try await TestCluster.shared.createDatabase(template: template)
    do {
        let value = try await body(database)
        await TestCluster.shared.dropDatabase(database.name)
        return value
    } catch {
        await TestCluster.shared.dropDatabase(database.name)
        throw error
    }
}

/// Where the test cluster, the migrations and PGMQ's script are.
public enum TestEnvironment {
    /// The repository root, found from this file's path.
    public static let repositoryRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    public static var environment: [String: String] { ProcessInfo.processInfo.environment }

    public static func adminURL() throws -> String {
        guard let url = environment["TASKER_TEST_DATABASE_URL"], !url.isEmpty else {
            throw TestSetupError(
                "TASKER_TEST_DATABASE_URL is not set: run the tests with scripts/test, which "
                    + "starts a throw-away PostgreSQL and sets it (or point it at a superuser URL of a cluster)")
        }
        return url
    }

    public static var migrationsDirectory: String {
        environment["TASKER_MIGRATIONS_DIR"] ?? "\(repositoryRoot)/migrations"
    }

    public static var pgmqScript: String? {
        PGMQScriptLocator(workingDirectory: repositoryRoot).locate(explicit: nil)
    }

    public static var pgmqSearchPaths: [String] {
        PGMQScriptLocator(workingDirectory: repositoryRoot).candidates(explicit: nil)
    }

    /// `adminURL` with its database replaced by `database`.
    public static func url(_ base: String, database: String) -> String {
        guard var components = URLComponents(string: base) else { return base }
        components.path = "/\(database)"
        return components.string ?? base
    }
}

public struct TestSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
