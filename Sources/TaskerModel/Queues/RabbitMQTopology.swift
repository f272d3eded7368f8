import TaskerAMQP
import TaskerStepModel

/// How upstream Tasker declares a queue on RabbitMQ (tasker-shared's RabbitMQ messaging provider),
/// byte for byte, so that our processes and upstream's can declare the same queues in any order
/// without `PRECONDITION_FAILED`.
public enum RabbitMQTopology {
    /// The suffix of dead-letter queues (declared without a dead-letter exchange of their own).
    public static let deadLetterSuffix = "_dlq"

    /// The queue arguments upstream gives a queue `name` that is not a dead-letter queue.
    public static func arguments(forQueue name: String) -> AMQPFieldTable {
        if name.hasSuffix(deadLetterSuffix) { return [:] }
        return [
            "x-dead-letter-exchange": .longString("\(name)_dlx"),
            "x-dead-letter-routing-key": .longString(name),
        ]
    }

    /// Declares `name` as upstream does. For a queue not ending in `_dlq`: the direct durable
    /// exchange `<name>_dlx`, the durable queue `<name>_dlq` without arguments bound to it with routing
    /// key `<name>`, then the durable queue `<name>` dead-lettering into that exchange. A `_dlq` queue
    /// is declared durable without arguments.
    public static func declareQueue(_ name: String, on channel: AMQPChannel) async throws(AMQPError) {
        if name.hasSuffix(deadLetterSuffix) {
            try await channel.declareQueue(name, durable: true)
            return
        }
        let exchange = "\(name)_dlx"
        let deadLetters = "\(name)\(deadLetterSuffix)"
        try await channel.declareExchange(exchange, type: "direct", durable: true)
        try await channel.declareQueue(deadLetters, durable: true)
        try await channel.bindQueue(deadLetters, exchange: exchange, routingKey: name)
        try await channel.declareQueue(name, durable: true, arguments: arguments(forQueue: name))
    }
}
