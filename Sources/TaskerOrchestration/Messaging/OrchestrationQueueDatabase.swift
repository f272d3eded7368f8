import Foundation
import Logging
import Synchronization
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The orchestration's queues in a database of their own (`[common.pgmq_database]`,
/// `PGMQ_DATABASE_URL`): its reads, archives, sends and LISTEN session go to TaskerMessaging's
/// `QueueDatabase`, the task tables stay in the task database. No transaction spans both, so it
/// works as on a broker:
/// - a message read is archived after its work committed (never in the work's transaction); a
///   message whose work committed and whose archive failed comes back after its visibility timeout:
///   a result for a step no longer waiting is ignored; a task request is created again unless its
///   task's identity says it exists (`identity_strategy`), as on RabbitMQ;
/// - step messages are sent after the enqueue committed (`EnqueueJournal`, `EnqueuedStepSender`),
///   each until the send committed; a message lost between the commit and the send (the process
///   died, the send was given up at shutdown) is found by `resendMissing`, which the orchestration
///   runs at start and every `OrchestrationSettings.lostMessageSweep`: steps `enqueued` for longer
///   than that whose message is in no worker queue (`tasker.pgmq_queued_steps`, migration 0012) are
///   sent again. A step whose message is queued gets no second one.
public final class OrchestrationQueueDatabase: EnqueuedStepSender {
    /// The queue database and its send.
    let queues: QueueDatabase
    let startedAt = Date()
    let logger: Logger
    /// Whether the queue database answers (`/health/ready`'s messaging check), on its own connection.
    let probe: DatabaseProbe
    /// Sweeps for lost step messages done so far (`resendMissing`).
    private let sweeps = Atomic<Int>(0)

    /// The queue database of `common`, or nil when the queues share the task database (or RabbitMQ
    /// carries the messages). `maxConnections`: a smaller pool than `[common.pgmq_database.pool]`'s
    /// (a command-line tool's).
    public static func configured(
        _ common: CommonConfiguration, applicationName: String, maxConnections: Int? = nil,
        logger: Logger = Logger(label: "tasker.orchestration.queue_database")
    ) -> OrchestrationQueueDatabase? {
        QueueDatabase.configured(common, applicationName: applicationName, maxConnections: maxConnections, logger: logger)
            .map { OrchestrationQueueDatabase(queues: $0, logger: logger) }
    }

    /// The queue database `pool` reaches.
    public convenience init(pool: PostgresConnectionPool, logger: Logger = Logger(label: "tasker.orchestration.queue_database")) {
        self.init(queues: QueueDatabase(pool: pool, logger: logger), logger: logger)
    }

    init(queues: QueueDatabase, logger: Logger) {
        self.queues = queues
        self.logger = logger
        self.probe = DatabaseProbe(configuration: queues.pool.configuration, logger: logger)
    }

    /// The queue database's pool.
    public var pool: PostgresConnectionPool { queues.pool }
    var stopped: OneShotSignal { queues.stopped }
    /// The queue database's URL, password hidden.
    public var description: String { queues.description }

    /// Sends each message to its worker queue and returns once every send committed; false when one
    /// could not be sent (the sweep sends it later).
    func send(_ entries: [EnqueueJournal.Entry]) async -> Bool {
        for entry in entries {
            let sent = await queues.sendUntilCommitted(
                PostgresJSON(raw: entry.message.jsonString()), to: entry.queue, what: "an enqueued step's message",
                metadata: ["step_uuid": "\(entry.message.stepUUID)", "task_uuid": "\(entry.message.taskUUID)"])
            guard sent else { return false }
        }
        return true
    }

    /// The step uuids of $2 (a text array) with a message in queue $1 (`tasker.pgmq_queued_steps`).
    static let queuedSteps = PreparedStatement("SELECT step FROM tasker.pgmq_queued_steps($1::text, $2::text[]) AS step")

    /// Sends again the message of every step `enqueued` for longer than `age` (by the task
    /// database's clock; at most `EnqueuedStepStatements.resendLimit`, the oldest first) whose
    /// message is in no worker queue. Returns how many were sent; 0 when a database did not answer
    /// (logged; the next sweep tries again).
    @discardableResult
    func resendMissing(pool: PostgresConnectionPool, olderThan age: Duration) async -> Int {
        defer { sweeps.add(1, ordering: .relaxed) }
        do {
            let enqueued = try await pool.withConnection { c in
                try await c.query(EnqueuedStepStatements.enqueuedFor, [age.inSeconds, EnqueuedStepStatements.resendLimit]).map {
                    row throws(PostgresError) -> EnqueueJournal.Entry in try EnqueuedStepStatements.entry(row)
                }
            }
            guard !enqueued.isEmpty else { return 0 }
            var missing: [EnqueueJournal.Entry] = []
            for (queue, entries) in Dictionary(grouping: enqueued, by: \.queue) {
                let steps = entries.map { $0.message.stepUUID.uuidString.lowercased() }
                let queued = try await queues.pool.withConnection { c in
                    Set(
                        try await c.query(Self.queuedSteps, [queue, PostgresArrayLiteral(steps)]).map {
                            row throws(PostgresError) -> String in try row.decode("step")
                        })
                }
                missing += entries.filter { !queued.contains($0.message.stepUUID.uuidString.lowercased()) }
            }
            guard !missing.isEmpty else { return 0 }
            logger.warning(
                "sending again the messages of steps enqueued with no message in the queue database (lost between the enqueue's commit and the send)",
                metadata: ["count": "\(missing.count)"])
            var sent = 0
            for entry in missing where await send([entry]) { sent += 1 }
            return sent
        } catch {
            logger.warning("the sweep for lost step messages failed; the next one tries again", metadata: ["error": "\(error)"])
            return 0
        }
    }

    /// Sweeps for lost step messages done so far.
    var sweepsDone: Int { sweeps.load(ordering: .relaxed) }

    /// Stops the sends' retries, closes the probe's connection and the pool.
    public func close() async {
        await probe.close()
        await queues.close()
    }
}
