import Logging
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

extension WorkerDaemon {
    /// Detects the PGMQ table layout of every served queue and of `orchestration_step_results`
    /// (after the templates created the queues) and switches the step path to static SQL for those
    /// whose layout is known (`StepQueueStatements`), unless `worker.pgmq.statements = "functions"`.
    /// Logs what it chose per queue. A failed detection keeps PGMQ's functions (slower, never wrong).
    func selectQueueStatements() async {
        // RabbitMQ carries the messages: the step path touches no PGMQ table (`StepQueueStatements.broker`).
        guard transport.detectsTableLayouts else { return }
        let queues = servedNamespaces.map(QueueNames.workerQueue(namespace:))
        let useFunctions = configuration.worker.pgmq.statements == .functions
        do {
            let (statements, layouts) = try await pool.withConnection { c in
                try await StepQueueStatements.detect(c, queues: queues, useFunctions: useFunctions)
            }
            queueStatements.use(statements)
            let unknown = layouts.filter { $0.value == nil }.keys.sorted()
            logger.info(
                "PGMQ statements chosen",
                metadata: [
                    "configured": "\(configuration.worker.pgmq.statements.rawValue)",
                    "static_sql_queues": "\(statements.staticQueues.joined(separator: ","))",
                    "function_queues": "\(useFunctions ? layouts.keys.sorted().joined(separator: ",") : unknown.joined(separator: ","))",
                    "layouts":
                        "\(layouts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value?.rawValue ?? "unknown")" }.joined(separator: ","))",
                ])
        } catch {
            logger.warning(
                "could not read the PGMQ table layouts; using PGMQ's functions",
                metadata: ["error": "\(error)"])
        }
    }
}
