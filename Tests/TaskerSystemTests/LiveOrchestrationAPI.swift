import Foundation
import Logging
import ServiceLifecycle
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerPostgres

/// The orchestration's REST server (`OrchestrationWebServer`) on a free loopback port over a test
/// database with the example templates registered, and raw HTTP/1.1 requests over real sockets: the
/// bytes a hostile client sends (headers, chunked bodies), not what a client library would.
struct LiveOrchestrationAPI: Sendable {
    let harness: OrchestrationHarness
    let pool: PostgresConnectionPool
    let host: String
    let port: Int
    let connections: RawConnections

    /// One answer: status, head (status line and headers) and body as text.
    struct Answer: Sendable {
        var status: Int
        var head: String
        var body: String

        /// The first value of header `name` (case-insensitive), if any.
        func header(_ name: String) -> String? {
            for line in head.split(separator: "\r\n").dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                if line[..<colon].lowercased() == name.lowercased() {
                    return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }

        /// The body as JSON (`.null` when it is not JSON).
        var json: JSONValue { (try? JSONDecoder().decode(JSONValue.self, from: Data(body.utf8))) ?? .null }
    }

    /// Runs `body` against a running server whose pool holds `maxConnections`, `operatorMaxConnections`
    /// of them for the API (the `.operator` lane), with the web settings `configure` makes of the
    /// defaults; stops everything afterwards, also on failure.
    static func with(
        maxConnections: Int = 4, operatorMaxConnections: Int = 2,
        configure: @Sendable (inout OrchestrationConfiguration.Web) -> Void = { _ in },
        _ body: @escaping @Sendable (LiveOrchestrationAPI) async throws -> Void
    ) async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let pool = PostgresConnectionPool(
                configuration: PostgresPoolConfiguration(
                    url: db.url, maxConnections: maxConnections, minConnections: 0, acquireTimeout: .seconds(5),
                    operatorMaxConnections: operatorMaxConnections))
            let service = OrchestrationService(pool: pool, databaseURL: db.url)
            var web = OrchestrationConfiguration.Web()
            configure(&web)
            web.bindAddress = "127.0.0.1:0"
            let server = OrchestrationWebServer(web: web, queries: TaskQueries(pool: pool, orchestration: service))
            let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [server], logger: Logger(label: "test.web")))
            let connections = RawConnections()
            do {
                try await withThrowingTaskGroup(of: Void.self) { tasks in
                    tasks.addTask { try await group.run() }
                    defer { tasks.cancelAll() }
                    var address: String?
                    try await waitUntil(timeout: .seconds(20)) {
                        address = server.boundAddress
                        return address != nil
                    }
                    let bound = try BindAddress(parsing: try #require(address))
                    try await body(
                        LiveOrchestrationAPI(harness: harness, pool: pool, host: bound.host, port: bound.port, connections: connections))
                    await connections.closeAll()
                    await group.triggerGracefulShutdown()
                    try await tasks.next()
                }
            } catch {
                await connections.closeAll()
                await harness.admin.close()
                await pool.close()
                throw error
            }
            await harness.admin.close()
            await pool.close()
        }
    }

    /// `Host` as a client of this server sends it.
    var authority: String { "\(host):\(port)" }

    /// Sends `method path` with `headers` (plus `Host`, `Connection: close` and, with a body,
    /// `Content-Length`) and `body`; answers once the server closed the connection.
    func request(
        _ method: String, _ path: String, headers: [(String, String)] = [], body: String? = nil, timeout: Duration = .seconds(60)
    ) async throws -> Answer {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(authority)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.utf8.count)\r\n" }
        return try await send(Array((head + "\r\n" + (body ?? "")).utf8), timeout: timeout)
    }

    /// Sends `bytes` as they are; answers once the server closed the connection.
    func send(_ bytes: [UInt8], timeout: Duration = .seconds(60)) async throws -> Answer {
        let connection = try await connections.connect(host: host, port: port)
        try await connection.send(bytes)
        try await waitUntil(timeout: timeout) { connection.isClosed }
        let text = connection.received
        guard let end = text.range(of: "\r\n\r\n") else {
            throw TestSetupError("no HTTP answer: \(text.prefix(300).debugDescription)")
        }
        let head = String(text[..<end.lowerBound])
        let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return Answer(status: status, head: head, body: String(text[end.upperBound...]))
    }

    /// Tasks in the database.
    func taskCount() async throws -> Int {
        try await harness.admin.query("SELECT count(*)::bigint AS n FROM tasker.tasks")[0].decode("n")
    }
}
