import ServiceLifecycle
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Step messages in PGMQ, in the worker's database: the claim archives its message in the claim's
/// own transaction and the result's statement sends orchestration's message (`StepQueueAccess`), so
/// what is left here is settling poison and stale messages, releasing a hidden one, and domain
/// events. The intake is `WorkerEventSystem`'s LISTEN and poller.
struct PGMQTransport: StepTransport {
    let pool: PostgresConnectionPool

    init(pool: PostgresConnectionPool) {
        self.pool = pool
    }

    var summary: String { "pgmq" }
    var services: [any Service] { [] }
    var initialStatements: StepQueueStatements { .functions }
    var detectsTableLayouts: Bool { true }
    var recoveryStatement: ResultStatement { .recoverFunctions }
    var unclaimedOutcome: DeliveryOutcome { .handled }
    var announcesAfterCommit: Bool { false }

    func settle(_ delivery: StepDelivery) async throws -> Bool {
        try await pool.withConnection { c in try await PGMQ.archive(c, queue: delivery.queue, msgID: delivery.msgID) }
    }

    func release(_ delivery: StepDelivery) async throws {
        guard delivery.hiddenByRead else { return }
        try await pool.withConnection { c in
            try await PGMQ.setVisibilityTimeout(c, queue: delivery.queue, msgID: delivery.msgID, seconds: 0)
        }
    }

    func announceResults(_ messages: [StepMessage]) async {}

    func publishEvent(_ json: String, to queue: String) async throws {
        let body = PostgresJSON(raw: json)
        _ = try await pool.withConnection { c in try await PGMQ.sendWithNotify(c, queue: queue, message: body) }
    }
}
