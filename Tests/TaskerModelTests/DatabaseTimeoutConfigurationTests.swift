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
