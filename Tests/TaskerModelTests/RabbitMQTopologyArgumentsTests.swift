import TaskerAMQP
import TaskerModel
import Testing

/// The arguments Tasker declares its RabbitMQ queues with, as upstream declares them: the dead-letter
/// exchange and routing key as long strings, nothing on a dead-letter queue. (The declarations on the
/// real broker, against pika's: `RabbitMQTopologyTests` in TaskerSystemTests.)
@Suite("RabbitMQ queue topology: arguments")
struct RabbitMQTopologyArgumentsTests {
    @Test func theArgumentsAreUpstreamsLongStrings() {
        #expect(
            RabbitMQTopology.arguments(forQueue: "worker_linear_queue") == [
                "x-dead-letter-exchange": .longString("worker_linear_queue_dlx"),
                "x-dead-letter-routing-key": .longString("worker_linear_queue"),
            ])
        #expect(RabbitMQTopology.arguments(forQueue: "worker_linear_queue_dlq").isEmpty)
    }
}
