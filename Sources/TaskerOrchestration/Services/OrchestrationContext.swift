import Foundation
import Logging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// What every orchestration service shares: the pool, the template registry (read from
/// `named_tasks.configuration`), this orchestrator's processor UUID (written on task transitions),
/// the backoff policy, and the per-task serialization.
public struct OrchestrationContext: Sendable {
    public let pool: PostgresConnectionPool
    public let templates: TaskTemplateRegistry
    /// `task_transitions.processor_uuid` of every transition this orchestrator writes.
    let processorUUID: UUID
    public let backoff: BackoffCalculator
    public let locks: TaskLocks
    public let logger: Logger
    /// RabbitMQ carries the step messages (published after the commit); nil: PGMQ.
    public let broker: OrchestrationBroker?
    /// The queues' own database (step messages sent after the commit); nil: the task database's
    /// PGMQ (sent in the enqueue's transaction) or RabbitMQ.
    public let queueDatabase: OrchestrationQueueDatabase?

    public init(
        pool: PostgresConnectionPool, processorUUID: UUID = UUID.v7(), backoff: BackoffCalculator = BackoffCalculator(),
        broker: OrchestrationBroker? = nil, queueDatabase: OrchestrationQueueDatabase? = nil,
        logger: Logger = Logger(label: "tasker.orchestration")
    ) {
        self.broker = broker
        self.queueDatabase = queueDatabase
        self.pool = pool
        self.templates = TaskTemplateRegistry(pool: pool, queuePool: queueDatabase?.pool, logger: logger)
        self.processorUUID = processorUUID
        self.backoff = backoff
        self.locks = TaskLocks()
        self.logger = logger
    }

    /// The template of a task, from the registry (memory, else `named_tasks.configuration`).
    func template(of task: TaskIdentity) async throws -> TaskTemplate {
        guard let template = try await templates.template(namespace: task.namespace, name: task.name, version: task.version)
        else { throw OrchestrationError.templateNotFound(namespace: task.namespace, name: task.name, version: task.version) }
        return template
    }

    /// Sent with every orchestration `BEGIN` (same round trip). The readiness functions
    /// (`get_step_readiness_status` and what it calls) are plpgsql: with the default plan cache
    /// mode every call re-plans their CTE query with the task's uuid (~2 ms, against ~0.2 ms to
    /// run it), and so do the prepared statements for their first executions. Their generic plans
    /// are index lookups on the task / step uuid, as good as the custom ones.
    static let transactionSettings = "SET LOCAL plan_cache_mode = force_generic_plan"

    /// `BEGIN` and the settings as the first statements of a pipeline.
    static let beginStatements: [PipelineStatement] = [.plain("BEGIN"), .plain(transactionSettings)]

    /// Where step messages go after the enqueue committed (RabbitMQ, or the queues' own database);
    /// nil when the enqueue statement sends them itself (PGMQ in the task database).
    var sender: (any EnqueuedStepSender)? { broker ?? queueDatabase }

    /// Runs `body` on a pooled connection inside one transaction.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (isolated PostgresConnection) throws -> T) async throws -> T {
        try await pool.withConnection { c in try await Self.transaction(c, body) }
    }

    /// Runs `body` inside one transaction on `c` (a connection the caller holds).
    static func transaction<T: Sendable>(
        _ c: PostgresConnection,
        _ body: @Sendable (isolated PostgresConnection) throws -> T
    ) async throws -> T {
        try await c.transaction(settings: transactionSettings, body)
    }
}

/// A queue message to archive (ack) together with the work it asked for: in the work's own
/// transaction (never before it commits).
public struct MessageReceipt: Sendable, Equatable {
    public var queue: String
    public var msgID: Int64

    public init(queue: String, msgID: Int64) {
        self.queue = queue
        self.msgID = msgID
    }

    /// `pgmq.archive` (the same text as `PGMQ.archive`, so one prepared statement per connection).
    static let archive = PreparedStatement("SELECT pgmq.archive($1::text, $2::bigint) AS archived")

    /// The archive as a pipeline statement.
    var archiveStatement: PipelineStatement { .prepared(Self.archive, [queue, msgID]) }

    /// The statements that end a pipelined transaction: the archive of `receipt` (if any), `COMMIT`.
    static func commit(archiving receipt: MessageReceipt?) -> [PipelineStatement] {
        (receipt.map { [$0.archiveStatement] } ?? []) + [.plain("COMMIT")]
    }
}

/// Serializes the work on each task in this process: a step result, a readiness pass and an
/// initialization of the same task never interleave (transitions are also compare-and-set in SQL,
/// which guards against other orchestrators).
public actor TaskLocks {
    private var waiters: [UUID: [CheckedContinuation<Void, Never>]] = [:]

    public init() {}

    /// Runs `body` while holding the task's lock.
    public nonisolated func withLock<T: Sendable>(_ task: UUID, _ body: @Sendable () async throws -> T) async throws -> T {
        await acquire(task)
        do {
            let value = try await body()
            await release(task)
            return value
        } catch {
            await release(task)
            throw error
        }
    }

    private func acquire(_ task: UUID) async {
        if waiters[task] == nil {
            waiters[task] = []
            return
        }
        await withCheckedContinuation { continuation in waiters[task, default: []].append(continuation) }
    }

    private func release(_ task: UUID) {
        guard var queue = waiters[task], !queue.isEmpty else {
            waiters[task] = nil
            return
        }
        let next = queue.removeFirst()
        waiters[task] = queue
        next.resume()
    }
}
