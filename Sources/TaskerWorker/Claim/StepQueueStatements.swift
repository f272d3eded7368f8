import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The claim and result statements the step path runs, chosen once at boot: on PGMQ, the static ones
/// (`StepQueueAccess.tables`) for each queue whose table layout is known (`PGMQTableLayout.detect`),
/// PGMQ's functions for any other (and for all of them when `worker.pgmq.statements = "functions"`);
/// with a broker, the variants that settle and send nothing in PostgreSQL.
struct StepQueueStatements: Sendable {
    /// PGMQ's functions for every queue.
    package static let functions = StepQueueStatements(claims: [:], defaultClaim: .functions, result: .functions)

    /// The step path with a broker carrying the messages: claims archive nothing and results send
    /// nothing in PostgreSQL.
    package static let broker = StepQueueStatements(claims: [:], defaultClaim: .broker, result: .broker)

    /// Static claims by worker queue.
    let claims: [String: ClaimStatement]
    /// The claim of a queue without a static one.
    let defaultClaim: ClaimStatement
    /// The result statement (its queue is `QueueNames.stepResults`).
    let result: ResultStatement
    /// Whether `result` sends by static SQL on the results queue's tables.
    private let staticResult: Bool

    /// Static statements for the queues in `layouts` (a queue whose name `PGMQQueueTables` refuses
    /// keeps the functions).
    package init(layouts: [String: PGMQTableLayout]) {
        var claims: [String: ClaimStatement] = [:]
        var result: ResultStatement?
        for (queue, layout) in layouts {
            guard let tables = PGMQQueueTables(queue: queue) else { continue }
            if queue == QueueNames.stepResults {
                result = ResultStatement(retiring: .own, sending: .tables(tables, layout))
            } else {
                claims[queue] = ClaimStatement(settling: .tables(tables, layout))
            }
        }
        self.init(claims: claims, defaultClaim: .functions, result: result ?? .functions, staticResult: result != nil)
    }

    private init(
        claims: [String: ClaimStatement], defaultClaim: ClaimStatement, result: ResultStatement, staticResult: Bool = false
    ) {
        self.claims = claims
        self.defaultClaim = defaultClaim
        self.result = result
        self.staticResult = staticResult
    }

    /// The claim for a message of `queue`.
    func claim(queue: String) -> ClaimStatement { claims[queue] ?? defaultClaim }
    /// The queues served with static statements (for the boot log), sorted.
    var staticQueues: [String] {
        claims.keys.sorted() + (staticResult ? [QueueNames.stepResults] : [])
    }

    /// Detects the layout of each of `queues` (and of `QueueNames.stepResults`) and builds the
    /// statements; with `useFunctions`, PGMQ's functions for all.
    package static func detect(
        _ c: isolated PostgresConnection, queues: [String], useFunctions: Bool
    ) throws(PostgresError) -> (statements: StepQueueStatements, layouts: [String: PGMQTableLayout?]) {
        var layouts: [String: PGMQTableLayout?] = [:]
        for queue in Set(queues + [QueueNames.stepResults]) {
            layouts[queue] = try PGMQTableLayout.detect(c, queue: queue)
        }
        if useFunctions { return (.functions, layouts) }
        return (StepQueueStatements(layouts: layouts.compactMapValues { $0 }), layouts)
    }
}

extension ClaimStatement {
    /// Archiving with `pgmq.archive`.
    static let functions = ClaimStatement(settling: .functions)
    /// Archiving nothing: a broker delivered the message.
    static let broker = ClaimStatement(settling: .broker)
}

extension ResultStatement {
    /// The completion's, sending with `tasker.pgmq_send_with_notify`.
    static let functions = ResultStatement(retiring: .own, sending: .functions)
    /// The completion's, sending nothing: a broker publishes the result after the commit.
    static let broker = ResultStatement(retiring: .own, sending: .broker)
    /// Crash recovery's, sending with `tasker.pgmq_send_with_notify`.
    static let recoverFunctions = ResultStatement(retiring: .lost, sending: .functions)
    /// Crash recovery's, sending nothing: the scanner publishes the `worker_lost` result after the commit.
    static let recoverBroker = ResultStatement(retiring: .lost, sending: .broker)
}
