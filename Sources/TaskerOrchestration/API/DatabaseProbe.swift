import Logging
import TaskerPostgres
import TaskerStore

/// Whether the database answers, for `/health`, `/health/ready` and `/health/detailed`: `SELECT 1` on
/// a connection of its own (opened on first use, replaced after any failure), never one of the pool,
/// so health answers while the task API holds every connection of its lane, and a probe never
/// waits behind it. Each probe is bounded by ``deadline`` (connecting included); probes asked for
/// while one runs share its answer, so any number of health clients cost one statement at a time.
/// One more connection than `common.database.pool.max_connections`, as the LISTEN connection is.
actor DatabaseProbe {
    /// The longest a probe takes; past it the database counts as not answering.
    static let deadline: Duration = .seconds(2)

    private let configuration: PostgresPoolConfiguration
    private let logger: Logger
    private var connection: PostgresConnection?
    private var running: Task<Bool, Never>?

    /// A probe of the database the pool of `configuration` connects to, with its session limits.
    init(configuration: PostgresPoolConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Whether `SELECT 1` answered within ``deadline`` (the probe running now, if any, or a new one).
    func answers() async -> Bool {
        if let running { return await running.value }
        let probe = Task { await self.probe() }
        running = probe
        let answer = await probe.value
        running = nil
        return answer
    }

    /// Closes the probe's connection (it is opened again by the next probe).
    func close() async {
        await connection?.close()
        connection = nil
    }

    private func probe() async -> Bool {
        let answered = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.selectOne() }
            group.addTask {
                try? await Task.sleep(for: Self.deadline)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        if !answered, let stale = connection {
            connection = nil
            await stale.close()
        }
        return answered
    }

    private func selectOne() async -> Bool {
        do {
            let c: PostgresConnection
            if let connection {
                c = connection
            } else {
                c = try await PostgresConnection.connect(
                    url: configuration.url, applicationName: "\(configuration.applicationName)-health",
                    connectTimeout: Self.deadline, limits: configuration.sessionLimits, route: configuration.route,
                    logger: logger)
                connection = c
            }
            _ = try await c.cancellable { try await c.query("SELECT 1") }
            return true
        } catch {
            logger.debug("database probe failed", metadata: ["error": "\(error)"])
            return false
        }
    }
}
