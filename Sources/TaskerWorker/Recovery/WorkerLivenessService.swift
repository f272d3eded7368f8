import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TaskerModel
import TaskerPostgres

/// The worker cannot hold a real session-level liveness lock: the statement after taking it ran
/// in another server session (a transaction-mode pooler such as PgBouncer `pool_mode =
/// transaction` sits between the worker and PostgreSQL).
package struct LivenessLockError: Error, CustomStringConvertible, Sendable {
    package var backendPID: Int32
    package var description: String {
        """
        the worker's liveness lock (a session-level advisory lock) is not held by its own session \
        (backend \(backendPID)) right after taking it: the database URL goes through a transaction-mode \
        pooler (PgBouncer pool_mode = transaction, or similar), which breaks session advisory locks and \
        LISTEN. Without a real liveness lock other workers would retry the steps this worker runs. Point \
        common.database.url at PostgreSQL directly or at a session-mode pool (PgBouncer pool_mode = session)
        """
    }
}

/// Holds the worker's liveness lock (`LivenessKey`) on a connection of its own, outside the pool,
/// for the worker's whole life; the lock ends with the process or the connection, which is how
/// other workers tell that this worker died (`RecoveryScanner`). Runs in the worker's group right
/// after the pool, so it is shut down after the pipeline has drained.
///
/// Claiming waits for the lock (`WorkerCapacity.setLiveness`). The lock is checked every
/// `checkInterval` (a check must answer within `checkTimeout`); when the connection is lost,
/// claiming stops at once and the service
/// reconnects (`ReconnectBackoff`, at most `maximumBackoff` apart, so that the lock is back well
/// within the grace period other workers wait) and takes the lock again. Steps already running go
/// on; if the lock stays lost for longer than the grace period they may be recovered by others,
/// and their late results are then refused by the completion (counted, logged).
///
/// If the session right after taking the lock does not show it held, a transaction-mode pooler is
/// in the way: the service throws `LivenessLockError` and the worker stops (it would otherwise
/// look dead to the others while it runs steps).
package final class WorkerLivenessService: Service, Sendable {
    let url: String
    let key: LivenessKey
    let capacity: WorkerCapacity
    let checkInterval: Duration
    let checkTimeout: Duration
    let backoff: ReconnectBackoff
    let logger: Logger
    private let backendPID = Atomic<Int32>(0)

    package init(
        url: String, identity: WorkerIdentity, capacity: WorkerCapacity, checkInterval: Duration,
        checkTimeout: Duration, maximumBackoff: Duration, logger: Logger = Logger(label: "tasker.liveness")
    ) {
        self.checkTimeout = checkTimeout
        self.url = url
        self.key = LivenessKey(worker: identity.uuid)
        self.capacity = capacity
        self.checkInterval = checkInterval
        self.backoff = ReconnectBackoff(initial: .milliseconds(100), maximum: maximumBackoff)
        self.logger = logger
    }

    /// The server process holding the lock now (0 while not held).
    package var lockSession: Int32 { backendPID.load(ordering: .relaxed) }

    package func run() async throws {
        defer { capacity.setLiveness(false) }
        try await cancelWhenGracefulShutdown { try await self.holdUntilCancelled() }
    }

    private func holdUntilCancelled() async throws {
        var attempt = 0
        var everHeld = false
        while !Task.isCancelled {
            var connection: PostgresConnection?
            do {
                let c = try await PostgresConnection.connect(
                    url: url, applicationName: "tasker-worker-liveness", connectTimeout: .seconds(5), logger: logger)
                connection = c
                let pid = try await Self.take(c, key)
                backendPID.store(pid, ordering: .relaxed)
                capacity.setLiveness(true)
                logger.log(
                    level: everHeld ? .warning : .info, everHeld ? "liveness lock taken again; claiming resumes" : "liveness lock taken",
                    metadata: ["backend_pid": "\(pid)", "lock_key": "\(LivenessKey.classID),\(key.objectID)"])
                everHeld = true
                attempt = 0
                while true {
                    try await Task.sleep(for: checkInterval)
                    try await check(c, pid: pid)
                }
            } catch let error as LivenessLockError {
                capacity.setLiveness(false)
                logger.critical("\(error.description)")
                await connection?.close()
                throw error
            } catch {
                capacity.setLiveness(false)
                backendPID.store(0, ordering: .relaxed)
                // Closed before going on (a check that did not answer was cancelled, and its
                // statement abandoned within a second), so that no connection is left behind and
                // nothing of this service runs after the worker has stopped.
                await connection?.close()
                if Task.isCancelled || error is CancellationError { return }
                let delay = backoff.delay(forAttempt: attempt)
                attempt += 1
                logger.warning(
                    "liveness connection lost: not claiming steps until the liveness lock is taken again",
                    metadata: ["error": "\(error)", "attempt": "\(attempt)", "retry_in": "\(delay)"])
                do { try await Task.sleep(for: delay) } catch { return }
            }
        }
    }

    /// Checks that this session still holds the lock, within `checkTimeout`: a check that does not
    /// answer (a network partition, where the socket only fails after TCP keepalive) counts as a
    /// lost connection, so that claiming stops before other workers take this worker's steps.
    private func check(_ c: PostgresConnection, pid: Int32) async throws {
        let key = key
        // Cancellable: the check that loses the race is cancelled, which sends PQcancel and, when
        // the server does not answer (a partition), abandons the connection within a second, so a
        // hung check never leaves a connection and its thread behind.
        switch await withDeadline(checkTimeout, { try await c.cancellable { try await Self.holds(c, key) } }) {
        case .value(true): return
        case .value(false): throw LivenessLockError(backendPID: pid)
        case .failed(let error): throw error
        case .timedOut:
            throw PostgresError(.connectionClosed, "the liveness lock check did not answer within \(checkTimeout)")
        }
    }

    /// Takes the lock and checks, in a statement of its own, that this session holds it. Returns
    /// the server process id.
    static func take(_ c: isolated PostgresConnection, _ key: LivenessKey) throws -> Int32 {
        _ = try c.query(RecoveryStatements.livenessSessionSettings)
        let row = try c.query(RecoveryStatements.takeLock, [Int(LivenessKey.classID), Int(key.lockArgument)])[0]
        let pid: Int32 = try row.decode("pid")
        // Shared mode: only an exclusive holder (no worker takes one) could refuse it; retried.
        guard try row.decode("taken", as: Bool.self) else {
            throw PostgresError(.usage, "the liveness lock \(LivenessKey.classID),\(key.objectID) is held exclusively by another session")
        }
        guard try holds(c, key) else { throw LivenessLockError(backendPID: pid) }
        return pid
    }

    /// Whether this session holds the lock (an error: the connection is broken).
    static func holds(_ c: isolated PostgresConnection, _ key: LivenessKey) throws(PostgresError) -> Bool {
        try c.query(RecoveryStatements.holdsLock, [Int64(key.objectID)])[0].decode("held")
    }
}
