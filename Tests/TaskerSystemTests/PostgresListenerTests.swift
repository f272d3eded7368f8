import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerPostgres
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
            #expect(
                await events.next()
                    == .notification(
                        PostgresNotification(
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
            #expect(
                next
                    == .notification(
                        PostgresNotification(
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
            // Keep notifying until the listener has subscribed; only then can one arrive.
            let admin = try await db.connect()
            let sender = Task {
                while !Task.isCancelled {
                    _ = try? await admin.query("SELECT pg_notify('pgmq_message_ready.late', 'x')")
                    try? await Task.sleep(for: .milliseconds(50))
                }
            }
            defer { sender.cancel() }
            if case .notification(let note) = await events.next() {
                #expect(note.channel == "pgmq_message_ready.late")
            } else {
                Issue.record("expected a notification")
            }
        }
    }
}
