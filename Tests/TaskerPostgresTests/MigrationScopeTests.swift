import Foundation
import TaskerModel
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerPostgres

/// Which migration files each database gets when the queues have a database of their own
/// (`MigrationScope`): the rule is a list, so a new migration that touches PGMQ must be placed by
/// hand; these tests fail until it is.
@Suite struct MigrationScopeTests {
    static let migrations = Migrator(
        databaseURL: "", migrationsDirectory: TestEnvironment.repositoryRoot + "/migrations", pgmqScript: nil)

    /// Every file that names PGMQ (`pgmq.` or the `pgmq_` helpers) is applied to the queue database;
    /// every file the task database does without names PGMQ, and no other file does.
    @Test func everyFileThatTouchesPGMQGoesToTheQueueDatabase() throws {
        let files = try Self.migrations.allMigrationFiles()
        #expect(MigrationScope.queueFiles.isSubset(of: Set(files)), "a queue file was renamed or removed")
        for file in files {
            let sql = try String(contentsOfFile: TestEnvironment.repositoryRoot + "/migrations/" + file, encoding: .utf8)
            let touchesPGMQ = sql.contains("pgmq.") || sql.contains("pgmq_")
            #expect(
                touchesPGMQ == MigrationScope.queueFiles.contains(file),
                "\(file): names PGMQ \(touchesPGMQ), placed in the queue database \(MigrationScope.queueFiles.contains(file))")
        }
        #expect(MigrationScope.queueOnlyFiles.isSubset(of: MigrationScope.queueFiles))
    }

    /// One database gets everything; a split gives each database its part, and together they cover
    /// every file; PGMQ is installed wherever the queues are.
    @Test func theScopesCoverEveryFile() throws {
        let files = try Self.migrations.allMigrationFiles()
        #expect(files.filter(MigrationScope.everything.applies) == files)
        let tasks = Set(files.filter(MigrationScope.taskDatabase.applies))
        let queues = Set(files.filter(MigrationScope.queueDatabase.applies))
        #expect(tasks.union(queues) == Set(files))
        #expect(tasks.intersection(queues) == MigrationScope.queueFiles.subtracting(MigrationScope.queueOnlyFiles))
        #expect(queues == MigrationScope.queueFiles)
        #expect(MigrationScope.everything.installsPGMQ && MigrationScope.queueDatabase.installsPGMQ)
        #expect(!MigrationScope.taskDatabase.installsPGMQ)
    }

    /// The queue database's pool exists only for a non-empty URL other than the task database's,
    /// with `[common.pgmq_database.pool]`'s sizes and the task database's session limits.
    @Test func theQueueDatabasePoolIsConfiguredOnlyForASeparateURL() {
        var common = CommonConfiguration()
        common.database.url = "postgresql://tasker@db/tasker"
        #expect(common.queueDatabasePool(applicationName: "t") == nil)
        common.pgmqDatabase.url = common.database.url
        #expect(common.queueDatabasePool(applicationName: "t") == nil)
        common.pgmqDatabase.url = "postgresql://tasker@queues/pgmq"
        common.pgmqDatabase.pool.maxConnections = 7
        common.database.statementTimeoutMs = 1234
        let pool = common.queueDatabasePool(applicationName: "t")
        #expect(pool?.url == "postgresql://tasker@queues/pgmq")
        #expect(pool?.maxConnections == 7)
        #expect(pool?.sessionLimits == common.database.sessionLimits)
    }
}
