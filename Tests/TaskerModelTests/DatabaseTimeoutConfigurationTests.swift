import TaskerTestSupport
import Testing

@testable import TaskerModel

/// `[common.database]`'s bounds on every wait as configured: `statement_timeout_ms`, `lock_timeout_ms`
/// and `connect_timeout_seconds` out of range are errors naming their key. (The bounds on the real
/// server: `BoundedWaitTests` in TaskerSystemTests.)
@Suite("Bounded database waits: configuration", .timeLimit(.minutes(2)))
struct DatabaseTimeoutConfigurationTests {
    @Test func outOfRangeTimeoutsAreConfigurationErrors() throws {
        let (error, file) = try loadError("[common.database]\nstatement_timeout_ms = 5\nlock_timeout_ms = 0\nconnect_timeout_seconds = 0\n")
        let text = error.issues.map(\.description).joined(separator: "\n")
        for key in ["statement_timeout_ms", "lock_timeout_ms", "connect_timeout_seconds"] {
            #expect(text.contains("common.database.\(key)"), "\(key) not named in: \(text)")
        }
        #expect(text.contains(file))
        #expect(TaskerConfiguration().common.database.statementTimeoutMs == 30_000)
        #expect(TaskerConfiguration().common.database.lockTimeoutMs == 10_000)
    }
}

/// `[common.database] transaction_pooler` and `listen_url` (issue #29): where the LISTEN session
/// connects, and a malformed `listen_url` refused by its key.
@Suite("Transaction pooler: configuration")
struct TransactionPoolerConfigurationTests {
    @Test func theListenSessionFollowsThePoolerSettings() throws {
        var database = CommonConfiguration.DatabaseSettings()
        database.url = "postgresql://pooler:6432/tasker"
        #expect(!database.transactionPooler && database.listenUrl.isEmpty)
        #expect(database.listenSessionURL == database.url, "direct: LISTEN through url")
        database.transactionPooler = true
        #expect(database.listenSessionURL == nil, "behind a transaction pooler without listen_url: no LISTEN")
        database.listenUrl = "postgresql://db:5432/tasker"
        #expect(database.listenSessionURL == "postgresql://db:5432/tasker")
        #expect(TaskerConfiguration().common.database.pool.minConnections == 1)
    }

    @Test func theKeysLoadAndABadListenURLIsNamed() throws {
        try withTemporaryDirectory { directory in
            let file = try writeFile(
                directory, "pooled.toml",
                """
                [common.database]
                url = "postgresql://pooler:6432/tasker"
                transaction_pooler = true
                listen_url = "${TASKER_LISTEN_DATABASE_URL:-}"
                """)
            let loaded = try ConfigurationLoader(environment: ["TASKER_LISTEN_DATABASE_URL": "postgresql://db/tasker"]).load(file: file)
            #expect(loaded.configuration.common.database.transactionPooler)
            #expect(loaded.configuration.common.database.listenUrl == "postgresql://db/tasker")
        }
        let (error, _) = try loadError("[common.database]\nlisten_url = \"mysql://db\"\n")
        #expect(error.issues.map(\.description).joined().contains("common.database.listen_url"))
    }
}
