import Foundation
import TaskerTestSupport
import Testing
@testable import TaskerWorker

@Suite("LISTEN/NOTIFY listener", .timeLimit(.minutes(2)))
struct PostgresListenerTests {
    @Test func reconnectsAfterTheBackendIsTerminatedAndKeepsDelivering() async throws {
        try await withTestDatabase { db in
            let listener = PostgresListener(
                url: db.url, channels: ["pgmq_message_ready.demo"],
                backoff: ReconnectBackoff(initial: .milliseconds(50), maximum: .milliseconds(200)))
            let run = Task { try await listener.run() }
            defer { run.cancel() }
            var events = listener.events.makeAsyncIterator()
            #expect(await events.next() == .connected(isReconnect: false))
            guard case .connected(let firstPID) = listener.state else {
                Issue.record("listener not connected: \(listener.state)")
                return
            }
            let admin = try await db.connect()
            try await admin.query("SELECT pg_notify('pgmq_message_ready.demo', 'before')")
            #expect(await events.next() == .notification(PostgresNotification(
                channel: "pgmq_message_ready.demo", payload: "before", backendPID: await admin.backendPID)))

            try await admin.query("SELECT pg_terminate_backend($1)", [Int32(firstPID)])
            #expect(await events.next() == .connected(isReconnect: true))
            guard case .connected(let secondPID) = listener.state else {
                Issue.record("listener not reconnected: \(listener.state)")
                return
            }
            #expect(secondPID != firstPID)

            try await admin.query("SELECT pg_notify('pgmq_message_ready.demo', 'after')")
            let next = await events.next()
            #expect(next == .notification(PostgresNotification(
                channel: "pgmq_message_ready.demo", payload: "after", backendPID: await admin.backendPID)))
        }
    }

    @Test func channelsAddedWhileConnectedAreListenedTo() async throws {
        try await withTestDatabase { db in
            let listener = PostgresListener(url: db.url, channels: [])
            let run = Task { try await listener.run() }
            defer { run.cancel() }
            var events = listener.events.makeAsyncIterator()
            #expect(await events.next() == .connected(isReconnect: false))
            listener.listen(["pgmq_message_ready.late"])
            let admin = try await db.connect()
            try await waitUntil {
                try await admin.query("""
                    SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
                      AND application_name = 'tasker-worker-listener'
                      AND query LIKE 'LISTEN%late%'
                    """).count == 1
            }
            try await admin.query("SELECT pg_notify('pgmq_message_ready.late', 'x')")
            if case .notification(let note) = await events.next() {
                #expect(note.channel == "pgmq_message_ready.late")
            } else {
                Issue.record("expected a notification")
            }
        }
    }

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
