import Foundation
import Synchronization
import TaskerModel
import TaskerStore

/// The step messages one command wrote `pending → enqueued` for without sending them in the same
/// transaction (RabbitMQ, or PGMQ in a database of its own, carries them: `EnqueuedStepSender`). Set
/// for the duration of a command by the processor (`OrchestrationCommandProcessorActor.process`,
/// only with such a sender); the enqueue
/// paths (`StepEnqueuerService`) see it through `current`, use the statements without the PGMQ send
/// and record each message. After the command returned (its transactions committed) the processor
/// publishes the recorded messages whose step is still `enqueued` (a message recorded by an attempt
/// that rolled back is not published unless the step did get enqueued).
final class EnqueueJournal: Sendable {
    /// The journal of the command running in this task; nil on PGMQ in the task database (messages
    /// sent in the transaction).
    @TaskLocal static var current: EnqueueJournal?

    /// One step message and the queue it goes to (`worker_<ns>_queue`).
    struct Entry: Sendable, Equatable {
        var queue: String
        var message: StepMessage
    }

    private let entries = Mutex<[Entry]>([])

    /// Records a message written in the current transaction.
    func record(queue: String, message: StepMessage) {
        entries.withLock { $0.append(Entry(queue: queue, message: message)) }
    }

    /// What was recorded, once per step (the last record wins), in order.
    var recorded: [Entry] {
        entries.withLock { entries in
            var seen = Set<UUID>()
            return entries.reversed().filter { seen.insert($0.message.stepUUID).inserted }.reversed()
        }
    }
}
