import Synchronization
import TaskerStore

/// The `StepQueueStatements` in use, shared by the claim and completion stages: PGMQ's functions
/// until `WorkerDaemon.run` has detected the queues' table layouts (after the templates created
/// the queues), then what the detection allows.
final class QueueStatementSelection: Sendable {
    private let current: Mutex<StepQueueStatements>

    package init(_ statements: StepQueueStatements = .functions) {
        current = Mutex(statements)
    }

    /// The statements to use now.
    package var statements: StepQueueStatements { current.withLock { $0 } }

    /// Replaces them (once, at boot).
    package func use(_ statements: StepQueueStatements) { current.withLock { $0 = statements } }
}
