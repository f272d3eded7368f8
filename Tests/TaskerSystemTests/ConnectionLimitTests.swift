import Foundation
import HTTPTypes
import HummingbirdTesting
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Connection limits of the REST and gRPC servers (issue #11 item 5), over real sockets against a
/// real `WorkerDaemon`: header-read and idle timeouts, the connection cap, gRPC idle connections.
@Suite("Connection limits", .timeLimit(.minutes(3)))
struct ConnectionLimitTests {
    static let healthRequest = "GET /health HTTP/1.1\r\nHost: worker\r\n\r\n"

    /// Runs `body` with a worker started on a fresh database and a set of raw connections, then
    /// closes those connections and stops the worker.
    static func withWorker(
        configure: @escaping (inout TaskerConfiguration) -> Void,
        _ body: (WebTestWorker, RawConnections) async throws -> Void
    ) async throws {
        try await withTestDatabase { db in
            let worker = try await WebTestWorker.start(db, waitForReady: false, configure: configure)
            let connections = RawConnections()
            do {
                try await body(worker, connections)
            } catch {
                await connections.closeAll()
                try? await worker.stop()
                throw error
            }
            await connections.closeAll()
            try await worker.stop()
        }
    }

    /// `host`, `port` of the worker's gRPC server once it listens.
    static func grpcAddress(_ worker: WebTestWorker) async throws -> (host: String, port: Int) {
        var address: String?
        try await waitUntil(timeout: .seconds(20)) {
            address = worker.daemon.boundAddresses.grpc
            return address != nil
        }
        let bound = try BindAddress(parsing: try #require(address))
        return (bound.host, bound.port)
    }

    /// Sends `GET /health` on `connection` and waits for the `count`-th response on it.
    static func expectHealthAnswered(
        _ connection: RawConnection, count: Int = 1,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        try await connection.send(healthRequest)
        try await waitUntil { connection.received.components(separatedBy: "HTTP/1.1 200").count > count }
        #expect(
            connection.received.components(separatedBy: "HTTP/1.1 200").count == count + 1,
            "\(connection.received)", sourceLocation: sourceLocation)
    }

    // MARK: - REST

    @Test func slowlorisClientIsClosedAfterTheHeaderReadTimeoutEvenWhileItTrickles() async throws {
        try await Self.withWorker(configure: {
            $0.worker.web.headerReadTimeoutSeconds = 1
            $0.worker.web.idleTimeoutSeconds = 120
        }) { worker, connections in
            let slow = try await connections.connect(host: worker.host, port: worker.port)
            try await slow.send("GET /health HTTP/1.1\r\nHost: worker\r\n")
            // One more header byte every 200 ms: the connection is never idle, its head never complete.
            let started = ContinuousClock.now
            while !slow.isClosed, started.duration(to: .now) < .seconds(10) {
                try? await slow.send("X")
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(slow.isClosed, "a stalled request head was not closed within 10 s (header timeout 1 s)")
            #expect(slow.receivedCount == 0 || !slow.received.contains("HTTP/1.1 200"))

            // A keep-alive connection whose next request head stalls is closed as well.
            let keepAlive = try await connections.connect(host: worker.host, port: worker.port)
            try await Self.expectHealthAnswered(keepAlive)
            try await keepAlive.send("GET /health HTTP/1.1\r\n")
            try await waitUntil { keepAlive.isClosed }
            #expect(keepAlive.isClosed)
        }
    }

    @Test func idleKeepAliveConnectionIsClosedAfterTheIdleTimeout() async throws {
        try await Self.withWorker(configure: {
            $0.worker.web.headerReadTimeoutSeconds = 60
            $0.worker.web.idleTimeoutSeconds = 1
        }) { worker, connections in
            let connection = try await connections.connect(host: worker.host, port: worker.port)
            try await Self.expectHealthAnswered(connection)
            #expect(!connection.isClosed)
            try await waitUntil { connection.isClosed }
            #expect(connection.isClosed, "an idle keep-alive connection stayed open (idle timeout 1 s)")
        }
    }

    @Test func connectionsBeyondTheCapWaitUntilASlotIsFreedAndOpenOnesKeepWorking() async throws {
        try await Self.withWorker(configure: { $0.worker.web.maxConnections = 5 }) { worker, connections in
            var open: [RawConnection] = []
            for _ in 0..<5 {
                let connection = try await connections.connect(host: worker.host, port: worker.port)
                try await Self.expectHealthAnswered(connection)
                open.append(connection)
            }
            // The 6th connects (the kernel queues it) but is not accepted: no answer.
            let sixth = try await connections.connect(host: worker.host, port: worker.port)
            try await sixth.send(Self.healthRequest)
            try await Task.sleep(for: .milliseconds(1500))
            #expect(sixth.receivedCount == 0, "a connection beyond the cap of 5 was served: \(sixth.received)")
            #expect(!sixth.isClosed)

            // A freed slot lets the waiting connection in; its /health is answered.
            await open.removeFirst().close()
            try await waitUntil { sixth.received.contains("HTTP/1.1 200") }
            #expect(sixth.received.contains("HTTP/1.1 200"))

            // The connections that were open all along still work.
            for connection in open {
                try await Self.expectHealthAnswered(connection, count: 2)
            }
            for connection in open + [sixth] { await connection.close() }
            #expect(try await worker.get("/health").status == .ok)
        }
    }

    /// One client address cannot fill the server: past its own limit its new connections are
    /// closed at once, while another address (and its open connections) are still served.
    @Test func oneClientAddressCannotTakeEveryConnection() async throws {
        try await Self.withWorker(configure: {
            $0.worker.web.maxConnectionsPerAddress = 3
            $0.worker.grpc.maxConnectionsPerAddress = 3
        }) { worker, connections in
            var open: [RawConnection] = []
            for _ in 0..<3 {
                let connection = try await connections.connect(host: worker.host, port: worker.port, from: "127.0.0.1")
                try await Self.expectHealthAnswered(connection)
                open.append(connection)
            }
            let fourth = try await connections.connect(host: worker.host, port: worker.port, from: "127.0.0.1")
            try await waitUntil { fourth.isClosed }
            #expect(fourth.isClosed && fourth.receivedCount == 0, "a 4th connection from one address was kept")
            // Another client gets in; the first client's open connections still work.
            let other = try await connections.connect(host: worker.host, port: worker.port, from: "127.0.0.2")
            try await Self.expectHealthAnswered(other)
            for connection in open { try await Self.expectHealthAnswered(connection, count: 2) }
            // A closed connection gives its place back.
            await open.removeFirst().close()
            try await waitUntil {
                let again = try await connections.connect(host: worker.host, port: worker.port, from: "127.0.0.1")
                try await Task.sleep(for: .milliseconds(100))
                return !again.isClosed
            }

            let (host, port) = try await Self.grpcAddress(worker)
            var grpc: [RawConnection] = []
            for _ in 0..<3 {
                let connection = try await connections.connect(host: host, port: port, http2: .answersPings, from: "127.0.0.1")
                // Accepted (the server's SETTINGS arrived) before the next one connects.
                try await waitUntil { connection.receivedCount > 0 }
                grpc.append(connection)
            }
            let fourthGRPC = try await connections.connect(host: host, port: port, http2: .answersPings, from: "127.0.0.1")
            try await waitUntil { fourthGRPC.isClosed }
            #expect(fourthGRPC.isClosed)
            #expect(grpc.allSatisfy { !$0.isClosed })
        }
    }

    // MARK: - gRPC

    @Test func grpcConnectionWithoutRPCsIsClosedAfterTheIdleTimeout() async throws {
        try await Self.withWorker(configure: {
            $0.worker.grpc.idleTimeoutSeconds = 1
            $0.worker.grpc.keepaliveIntervalSeconds = 2
            $0.worker.grpc.keepaliveTimeoutSeconds = 1
        }) { worker, connections in
            let (host, port) = try await Self.grpcAddress(worker)
            // Answers the server's pings like a real client, so keepalive alone never closes it.
            let client = try await connections.connect(host: host, port: port, http2: .answersPings)
            try await waitUntil { client.isClosed }
            #expect(client.goAways >= 1, "no GOAWAY before the close")
            #expect(client.isClosed, "an idle gRPC connection stayed open (idle timeout 1 s)")
        }
    }

    @Test func grpcClientThatGoesSilentAfterGoAwayIsClosed() async throws {
        try await Self.withWorker(configure: {
            $0.worker.grpc.idleTimeoutSeconds = 1
            $0.worker.grpc.keepaliveIntervalSeconds = 2
            $0.worker.grpc.keepaliveTimeoutSeconds = 1
        }) { worker, connections in
            let (host, port) = try await Self.grpcAddress(worker)
            // Never acknowledges the GOAWAY's ping: grpc-swift alone would wait for it for ever.
            let client = try await connections.connect(host: host, port: port, http2: .silentAfterGoAway)
            try await waitUntil { client.isClosed }
            #expect(client.goAways >= 1)
            #expect(client.isClosed, "a silent gRPC connection stayed open after its GOAWAY")
        }
    }

    @Test func grpcConnectionsBeyondTheCapAreNotAcceptedUntilOneCloses() async throws {
        try await Self.withWorker(configure: { $0.worker.grpc.maxConnections = 2 }) { worker, connections in
            let (host, port) = try await Self.grpcAddress(worker)
            let first = try await connections.connect(host: host, port: port, http2: .answersPings)
            let second = try await connections.connect(host: host, port: port, http2: .answersPings)
            // An accepted connection gets the server's SETTINGS frame at once.
            try await waitUntil { first.receivedCount > 0 && second.receivedCount > 0 }
            let third = try await connections.connect(host: host, port: port, http2: .answersPings)
            try await Task.sleep(for: .milliseconds(1500))
            #expect(third.receivedCount == 0, "a gRPC connection beyond the cap of 2 was accepted")
            await first.close()
            try await waitUntil { third.receivedCount > 0 }
            #expect(third.receivedCount > 0)
            #expect(!second.isClosed)
            await second.close()
            await third.close()
        }
    }
}
