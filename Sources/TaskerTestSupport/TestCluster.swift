import Foundation
import Logging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Owns the admin connection to the test cluster, builds the template database once per set of
/// migrations, and creates and drops the per-test databases.
actor TestCluster {
    static let shared = TestCluster()

    private var admin: PostgresConnectionPool?
    /// The migrated templates built so far, by scope.
    private var templateNames: [MigrationScope: String] = [:]

    private func adminPool() throws -> PostgresConnectionPool {
        if let admin { return admin }
        // Every test starts by creating its database (~0.5 s each under a full parallel run, on 2
        // cores): the first burst queues ~300 CREATE DATABASE behind these connections, so the
        // wait is long by design; the timeout only catches a pool that really stalls.
        let pool = PostgresConnectionPool(
            configuration: PostgresPoolConfiguration(
                url: try TestEnvironment.adminURL(), maxConnections: 6, minConnections: 0,
                acquireTimeout: .seconds(300), applicationName: "tasker-test-admin"))
        admin = pool
        return pool
    }

    /// A database cloned from `template`, or else from the template migrated for `scope`.
    func createDatabase(template: String? = nil, scope: MigrationScope = .everything) async throws -> TestDatabase {
        let pool = try adminPool()
        let source: String
        if let template { source = template } else { source = try await ensureTemplate(scope) }
        let name = "tasker_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        try await pool.query("CREATE DATABASE \"\(name)\" TEMPLATE \"\(source)\"")
        return TestDatabase(name: name, url: TestEnvironment.url(try TestEnvironment.adminURL(), database: name))
    }

    func dropDatabase(_ name: String) async {
        do {
            try await adminPool().query("DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)")
        } catch {
            Logger(label: "tasker.test").warning("could not drop test database \(name): \(error)")
        }
    }

    /// Builds (once, under an advisory lock shared by every test process) a database with PGMQ and
    /// all migrations (or what `scope` applies), named after a hash of the migration files so that
    /// changed migrations get a new template.
    private func ensureTemplate(_ scope: MigrationScope) async throws -> String {
        if let name = templateNames[scope] { return name }
        let suffix =
            switch scope {
            case .everything: ""
            case .taskDatabase: "_tasks"
            case .queueDatabase: "_queues"
            }
        let name = "tasker_template_" + (try Self.migrationsFingerprint()) + suffix
        let pool = try adminPool()
        let lockKey = 7_263_541_004_202
        try await pool.withConnection { connection in
            try await connection.query("SELECT pg_advisory_lock($1)", [lockKey])
            do {
                try await Self.buildTemplate(name, scope: scope, on: connection)
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock($1)", [lockKey])
                throw error
            }
            try await connection.query("SELECT pg_advisory_unlock($1)", [lockKey])
        }
        templateNames[scope] = name
        return name
    }

    private static func buildTemplate(_ name: String, scope: MigrationScope, on connection: PostgresConnection) async throws {
        let ready: Bool = try await connection.query(
            "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate) AS ready", [name])[0]
            .decode("ready")
        if ready { return }
        try await connection.query("DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)")
        try await connection.query("CREATE DATABASE \"\(name)\" TEMPLATE template0")
        let migrator = Migrator(
            databaseURL: TestEnvironment.url(try TestEnvironment.adminURL(), database: name),
            migrationsDirectory: TestEnvironment.migrationsDirectory,
            pgmqScript: TestEnvironment.pgmqScript, pgmqSearchPaths: TestEnvironment.pgmqSearchPaths, scope: scope)
        _ = try await migrator.run()
        try await connection.query("ALTER DATABASE \"\(name)\" WITH IS_TEMPLATE true")
    }

    /// FNV-1a over the migration file names and contents.
    static func migrationsFingerprint() throws -> String {
        let directory = TestEnvironment.migrationsDirectory
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".sql") }.sorted()
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for file in files {
            let data = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(file)"))
            for byte in Array(file.utf8) + Array(data) {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
        }
        return String(hash, radix: 16)
    }
}
