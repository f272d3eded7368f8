import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import TaskerAMQP
import TaskerPostgres
import TaskerTestSupport
import Testing

/// The connection's life against the real broker: heartbeats, a broker-forced close as a typed error
/// for every waiter, a silent broker detected, and the reconnecting service re-running its setup.
@Suite("AMQP connection against RabbitMQ", BrokerEnvironment.available, .serialized)
struct AMQPConnectionTests {
    @Test func aConnectionIsNegotiatedAndClosedCleanly() async throws {
        let connection = try await BrokerEnvironment.connect(heartbeatSeconds: 7)
        #expect(await connection.isOpen)
        #expect(await connection.negotiatedHeartbeatSeconds == 7)
        #expect(await connection.negotiatedChannelMax > 0)
        await connection.close()
        #expect(await connection.closed() == .closedByClient)
        await #expect(throws: AMQPError.closedByClient) { try await connection.openChannel() }
    }

    @Test func wrongCredentialsFailToConnectWithoutShowingThePassword() async throws {
        var configuration = try BrokerEnvironment.configuration()
        configuration.password = "not-the-password"
        await #expect {
            try await AMQPConnection.connect(configuration)
        } throws: { error in
            guard case .connectFailed = error as? AMQPError else { return false }
            return !"\(error)".contains("not-the-password")
        }
    }

    @Test func aBrokerForcedCloseFailsEveryWaiterWithTheReplyCode() async throws {
        let name = BrokerEnvironment.uniqueName("amqp-test-forced")
        let connection = try await BrokerEnvironment.connect(name: name)
        let channel = try await connection.openChannel()
        let queue = name
        try await channel.declareQueue(queue, autoDelete: true)
        let consumer = try await channel.consume(queue: queue)
        #expect(try await BrokerEnvironment.forceClose(connectionsNamed: name) == 1)
        let reason = await connection.closed()
        guard case .connectionClosedByBroker(let close) = reason else {
            Issue.record("ended with \(reason)")
            return
        }
        #expect(close.replyCode == AMQPCloseReason.connectionForced)
        await #expect(throws: reason) {
            for try await _ in consumer {}
        }
        await #expect(throws: reason) { try await channel.inspectQueue(queue) }
    }

    @Test func heartbeatsKeepAnIdleConnectionOpenAndASilentBrokerIsDetected() async throws {
        let proxy = try AnswerLosingProxy(databaseURL: try #require(BrokerEnvironment.url))
        defer { proxy.close() }
        var configuration = try AMQPConfiguration(url: proxy.url)
        configuration.heartbeatSeconds = 1
        let connection = try await AMQPConnection.connect(configuration)
        // Idle for three intervals: the broker closes a connection that sends no heartbeats after two.
        try await Task.sleep(for: .seconds(3))
        #expect(await connection.isOpen)
        proxy.blackHole()
        let started = ContinuousClock.now
        // Bounded: without the detection nothing would ever end this connection.
        let reason = await withTaskGroup(of: AMQPError?.self) { group in
            group.addTask { await connection.closed() }
            group.addTask {
                try? await Task.sleep(for: .seconds(15))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            await connection.close()
            return first
        }
        #expect(reason == .missedHeartbeats(intervalSeconds: 1))
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    /// A broker that stops answering but keeps the TCP connection is noticed only after two heartbeat
    /// intervals (60 s here); until then a cancelled caller must not stay stuck in its wait.
    @Test func waitsForASilentBrokerEndAtOnceWhenTheirTaskIsCancelled() async throws {
        let proxy = try AnswerLosingProxy(databaseURL: try #require(BrokerEnvironment.url))
        defer { proxy.close() }
        var configuration = try AMQPConfiguration(url: proxy.url)
        configuration.heartbeatSeconds = 30
        let connection = try await AMQPConnection.connect(configuration)
        let channel = try await connection.openChannel()
        try await channel.enablePublisherConfirms()
        proxy.blackHole()
        let waits: [Task<AMQPError?, Never>] = [
            Task {
                do {
                    try await channel.declareQueue(BrokerEnvironment.uniqueName("amqp-test-silent"), autoDelete: true)
                    return nil
                } catch { return error as? AMQPError }
            },
            Task {
                do {
                    try await channel.publish(ByteBuffer(string: "unconfirmed"), routingKey: "amqp-test-nowhere")
                    return nil
                } catch { return error as? AMQPError }
            },
            Task {
                do {
                    _ = try await connection.openChannel()
                    return nil
                } catch { return error as? AMQPError }
            },
        ]
        try await Task.sleep(for: .milliseconds(300))
        let cancelled = ContinuousClock.now
        for wait in waits { wait.cancel() }
        for wait in waits { #expect(await wait.value == .cancelled) }
        #expect(ContinuousClock.now - cancelled < .seconds(5))
        #expect(await connection.isOpen)
        await connection.close()
    }

    @Test func theServiceStopsPromptlyWhileItsSetupWaitsForASilentBroker() async throws {
        let proxy = try AnswerLosingProxy(databaseURL: try #require(BrokerEnvironment.url))
        defer { proxy.close() }
        var configuration = try AMQPConfiguration(url: proxy.url)
        configuration.heartbeatSeconds = 30
        let waiting = SetupCount()
        let service = AMQPConnectionService(configuration: configuration, delay: { _ in .seconds(1) }) { connection in
            let channel = try await connection.openChannel()
            proxy.blackHole()
            waiting.increment()
            try await channel.declareQueue(BrokerEnvironment.uniqueName("amqp-test-silent"), autoDelete: true)
        }
        let running = Task { try await service.run() }
        #expect(try await eventually { waiting.value == 1 })
        try await Task.sleep(for: .milliseconds(200))
        let cancelled = ContinuousClock.now
        running.cancel()
        try await running.value
        // The setup's connection is closed with up to 5 s for a close-ok that never comes.
        #expect(ContinuousClock.now - cancelled < .seconds(10))
        #expect(service.state == .stopped)
    }

    @Test func theServiceReconnectsAfterABrokerForcedCloseAndRerunsItsSetup() async throws {
        let queue = BrokerEnvironment.uniqueName("amqp-test-service")
        let setups = SetupCount()
        let service = AMQPConnectionService(
            configuration: try BrokerEnvironment.configuration(name: queue),
            delay: ReconnectBackoff(initial: .milliseconds(50), maximum: .milliseconds(500)).delay(forAttempt:)
        ) { connection in
            let channel = try await connection.openChannel()
            try await channel.declareQueue(queue, durable: true)
            setups.increment()
        }
        let running = Task { try await service.run() }
        defer { running.cancel() }
        #expect(try await eventually { service.state == .connected })
        #expect(service.generation == 1 && setups.value == 1)
        let first = try #require(service.connection)

        #expect(try await BrokerEnvironment.forceClose(connectionsNamed: queue) == 1)
        #expect(await first.closed().replyCode == AMQPCloseReason.connectionForced)
        #expect(try await eventually { service.generation == 2 && service.state == .connected })
        #expect(setups.value == 2)
        let second = try #require(service.connection)
        let channel = try await second.openChannel()
        #expect(try await channel.inspectQueue(queue).messageCount == 0)
        try await channel.deleteQueue(queue)

        running.cancel()
        try await running.value
        #expect(service.state == .stopped)
        #expect(await second.closed() == .closedByClient)
    }
}

extension AMQPConnectionTests {
    /// `connection(after:)` wakes on the state's changes: a waiter gets each new connection (the
    /// consumer's loop starts again on it without polling), nil once the service stopped, and nil
    /// when its task is cancelled.
    @Test func aWaiterGetsEachNewConnectionAndNilOnceTheServiceStops() async throws {
        let name = BrokerEnvironment.uniqueName("amqp-test-waiter")
        let service = AMQPConnectionService(
            configuration: try BrokerEnvironment.configuration(name: name),
            delay: ReconnectBackoff(initial: .milliseconds(50), maximum: .milliseconds(500)).delay(forAttempt:)
        ) { _ in }
        // Waiting before the service even runs.
        let firstWaiter = Task { await service.connection(after: 0) }
        let running = Task { try await service.run() }
        defer { running.cancel() }
        let first = try #require(await firstWaiter.value)
        #expect(first.generation == 1)
        #expect(first.connection === service.connection)

        let nextWaiter = Task { await service.connection(after: first.generation) }
        #expect(try await BrokerEnvironment.forceClose(connectionsNamed: name) == 1)
        let second = try #require(await nextWaiter.value)
        #expect(second.generation == 2 && second.connection !== first.connection)
        // A generation already passed: at once.
        #expect(await service.connection(after: 1)?.generation == 2)

        let afterStop = Task { await service.connection(after: second.generation) }
        running.cancel()
        try await running.value
        #expect(await afterStop.value == nil)
        #expect(await service.connection(after: 0) == nil)

        // A waiter whose task is cancelled ends with nil (a service that never runs).
        let idle = AMQPConnectionService(configuration: try BrokerEnvironment.configuration(name: name), delay: { _ in .seconds(1) }) { _ in
        }
        let cancelled = Task { await idle.connection(after: 0) }
        cancelled.cancel()
        #expect(await cancelled.value == nil)
    }
}

/// A thread-safe count for setup closures.
final class SetupCount: Sendable {
    private let count = Atomic<Int>(0)
    func increment() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}
