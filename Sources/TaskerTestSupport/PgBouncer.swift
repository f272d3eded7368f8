import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real PgBouncer (Debian's `pgbouncer`, found by `scripts/test` and named by
/// `TASKER_TEST_PGBOUNCER`) in front of the test PostgreSQL, in transaction mode by default: every
/// transaction of a client may run in another server session, and the clients share
/// `serverConnections` server sessions. It listens on a Unix socket in a directory of its own (no
/// port to race other tests for), trusts the test cluster's user, and is stopped by `stop()`
/// (`with` stops it on every path).
package final class PgBouncer: Sendable {
    /// The URL to give a client: the database's URL through the pooler.
    package let url: String
    private let process: Process
    private let directory: URL

    /// Starts PgBouncer for the database of `databaseURL` and waits until it accepts connections.
    package init(databaseURL: String, poolMode: String = "transaction", serverConnections: Int = 1) async throws {
        guard let binary = ProcessInfo.processInfo.environment["TASKER_TEST_PGBOUNCER"], !binary.isEmpty else {
            throw TestSetupError("TASKER_TEST_PGBOUNCER is not set: run the tests through scripts/test, which installs PgBouncer")
        }
        guard let components = URLComponents(string: databaseURL), let port = components.port,
            let user = components.user, let host = components.host
        else { throw TestSetupError("cannot read a user, host and port in \(databaseURL)") }
        let database = String(components.path.dropFirst())
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tasker-pgbouncer-\(UUID().uuidString)")
        // PgBouncer refuses to run as root: `scripts/test` then names a user to drop to, who must
        // be able to write its log, pid file and socket here.
        let osUser = ProcessInfo.processInfo.environment["TASKER_TEST_PGBOUNCER_USER"].flatMap { $0.isEmpty ? nil : $0 }
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true,
            attributes: osUser.map { [.ownerAccountName: $0, .posixPermissions: 0o700] })
        let listenPort = 6432
        try "\"\(user)\" \"\"\n".write(to: directory.appendingPathComponent("users.txt"), atomically: true, encoding: .utf8)
        let ini = """
            [databases]
            * = host=\(host) port=\(port)

            [pgbouncer]
            listen_addr =
            listen_port = \(listenPort)
            unix_socket_dir = \(directory.path)
            auth_type = trust
            auth_file = \(directory.appendingPathComponent("users.txt").path)
            pool_mode = \(poolMode)
            default_pool_size = \(serverConnections)
            min_pool_size = 0
            reserve_pool_size = 0
            max_client_conn = 50
            ignore_startup_parameters = extra_float_digits,options
            server_reset_query =
            logfile = \(directory.appendingPathComponent("pgbouncer.log").path)
            pidfile = \(directory.appendingPathComponent("pgbouncer.pid").path)
            """
        let iniPath = directory.appendingPathComponent("pgbouncer.ini").path
        try ini.write(toFile: iniPath, atomically: true, encoding: .utf8)
        var through = URLComponents()
        through.scheme = "postgresql"
        through.user = user
        through.path = "/\(database)"
        through.queryItems = [
            URLQueryItem(name: "host", value: directory.path), URLQueryItem(name: "port", value: String(listenPort)),
        ]
        url = through.string ?? ""
        process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = (osUser.map { ["-u", $0] } ?? []) + [iniPath]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try ProcessLaunch.run(process)
        let socket = directory.appendingPathComponent(".s.PGSQL.\(listenPort)").path
        guard try await eventually(within: .seconds(30), { FileManager.default.fileExists(atPath: socket) || !process.isRunning }),
            process.isRunning
        else {
            await stop()
            throw TestSetupError("PgBouncer did not start listening on \(socket): \(log.suffix(2000))")
        }
    }

    /// What PgBouncer logged (connections, errors), for a failing test's message.
    package var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("pgbouncer.log"), encoding: .utf8)) ?? ""
    }

    /// Runs `body` with a PgBouncer for `databaseURL` (as `init`), stopped afterwards whatever
    /// `body` does.
    package static func with<T>(
        databaseURL: String, poolMode: String = "transaction", serverConnections: Int = 1,
        _ body: (PgBouncer) async throws -> T
    ) async throws -> T {
        let bouncer = try await PgBouncer(databaseURL: databaseURL, poolMode: poolMode, serverConnections: serverConnections)
        do {
            let value = try await body(bouncer)
            await bouncer.stop()
            return value
        } catch {
            // The test failed: what the pooler saw goes with it (read before `stop` removes the directory).
            FileHandle.standardError.write(Data("[PgBouncer] log of a failed test:\n\(bouncer.log.suffix(4000))\n".utf8))
            await bouncer.stop()
            throw error
        }
    }

    /// Stops PgBouncer and removes its directory. SIGKILL: a child spawned by a test process may
    /// inherit SIGTERM blocked (and then never see it); nothing of a test's pooler needs keeping.
    package func stop() async {
        kill()
        _ = try? await eventually(within: .seconds(30)) { !process.isRunning }
        try? FileManager.default.removeItem(at: directory)
    }

    private func kill() {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
    }
}
