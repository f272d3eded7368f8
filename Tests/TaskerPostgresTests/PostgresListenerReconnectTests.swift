import TaskerTestSupport
import Testing

@testable import TaskerPostgres

/// The listener with no server to reach (a closed loopback port): it reports that it reconnects, with
/// its attempts, and stops on cancel. (Against the real PostgreSQL: `PostgresListenerTests` in
/// TaskerSystemTests.)
@Suite("LISTEN/NOTIFY listener: unreachable server", .timeLimit(.minutes(2)))
struct PostgresListenerReconnectTests {
    @Test func reportsReconnectingWhileTheServerIsUnreachableAndStopsOnCancel() async throws {
        let listener = PostgresListener(
            url: "postgresql://tasker@127.0.0.1:1/nothing?connect_timeout=1",
            backoff: ReconnectBackoff(initial: .milliseconds(20), maximum: .milliseconds(50)))
        let run = Task { try await listener.run() }
        try await waitUntil {
            if case .reconnecting(let attempt, _) = listener.state { return attempt >= 2 }
            return false
        }
        run.cancel()
        try await run.value
        #expect(listener.state == .stopped)
    }
}
