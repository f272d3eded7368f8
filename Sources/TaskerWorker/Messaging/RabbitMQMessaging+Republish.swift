import TaskerHandlerSDK
import TaskerMessaging
import TaskerModel
import TaskerPostgres

extension RabbitMQMessaging {
    /// Re-publishes, confirmed, the result message of every step waiting for orchestration since
    /// before this process started (`UnannouncedResults`); run by `RabbitMQIntake` at every start.
    /// Returns how many were published.
    @discardableResult
    func republishUnannounced(pool: PostgresConnectionPool) async -> Int {
        let unannounced = UnannouncedResults(
            namespaces: queues.map(QueueNames.namespace(ofWorkerQueue:)), startedAt: startedAt, stopped: broker.stopped,
            logger: logger)
        return await unannounced.republish(pool: pool) { message in await self.publishResult(message) }
    }
}
