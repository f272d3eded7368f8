import ServiceLifecycle
import TaskerHandlerSDK
import TaskerModel
import TaskerStore

/// What differs between the transports that carry step messages (`[common.queues] backend`): one
/// implementation per transport (`PGMQTransport`, `QueueDatabaseTransport`, `RabbitMQMessaging`), chosen once at start by
/// `WorkerPipeline`. The pipeline's stages (claim, completion, crash recovery, domain events) call
/// these and never ask which transport they run on.
///
/// | | PGMQ | PGMQ in its own database | RabbitMQ |
/// |---|---|---|---|
/// | intake | `WorkerEventSystem`'s LISTEN + poller | the same, on the queue database | one consumer per namespace queue (`RabbitMQIntake`) |
/// | claim | hydrate + claim + archive, one transaction | hydrate + claim; archived after commit | hydrate + claim, one transaction; ack after commit |
/// | poison, stale | archived | archived | acked |
/// | not claimed now | stays queued (visible again at once when the lease refused it) | the same | requeued |
/// | result | sent in the result's statement | sent after the result commits; re-sent by the next start if lost | published (confirmed) after the result commits; the same |
/// | domain event | `pgmq_send_with_notify` | the same, on the queue database | confirmed publish |
protocol StepTransport: Sendable {
    /// The transport as the boot log names it: `pgmq`, or `rabbitmq <broker URL without password>`.
    var summary: String { get }

    /// What the transport runs beside the pipeline (the broker's connection), placed right after
    /// the pool: stopped after the completion service, which still announces results while the
    /// pipeline drains.
    var services: [any Service] { get }

    /// The claim and result statements the step path starts with.
    var initialStatements: StepQueueStatements { get }

    /// Whether the step path may switch to static SQL on the PGMQ tables whose layout it detects at
    /// boot (`WorkerDaemon.selectQueueStatements`).
    var detectsTableLayouts: Bool { get }

    /// Crash recovery's write (`ResultStatement(retiring: .lost, …)`), sending in PGMQ or not.
    var recoveryStatement: ResultStatement { get }

    /// What the intake does with a message whose step this worker did not claim now but that must
    /// not be lost (another worker won a race for a still-claimable step; the database refused the
    /// claim for the lease): PGMQ `.handled` (the message stays in its queue), a broker
    /// `.retryLater` (requeued; acked, it would be gone).
    var unclaimedOutcome: DeliveryOutcome { get }

    /// Settles a message that will never be processed (poison, or stale: its step moved on). True
    /// when this call settled it (PGMQ: archived it now; false: someone already had); a broker's
    /// delivery is acked by its intake on `.handled` (true).
    func settle(_ delivery: StepDelivery) async throws -> Bool

    /// Settles the messages of steps whose claims committed (and that were dispatched): nothing
    /// where the claim archived them in its own transaction (PGMQ) or the intake acks them (a
    /// broker); archived now when the queues have a database of their own. Never throws: a message
    /// left behind comes back and is settled as a stale duplicate.
    func settleClaimed(_ deliveries: [StepDelivery]) async

    /// Announces one stored result and returns once it is durable (a confirmed publish, a committed
    /// send); false when it could not be. True at once where the result's statement sent it (PGMQ).
    func announceDurably(_ message: StepMessage) async -> Bool

    /// Whether stored results are announced after their commit (`announceResults` does the work),
    /// so that a process dying in between leaves results unannounced for the recovery to send
    /// (`UnannouncedResults`); false where the result's statement sends them itself (PGMQ).
    var announcesAfterCommit: Bool { get }

    /// Makes a message this worker hid by reading it visible to every worker at once (it will not
    /// claim it now); nothing on a broker, whose deliveries are requeued or held by the intake.
    func release(_ delivery: StepDelivery) async throws

    /// Tells orchestration about results just stored: nothing on PGMQ (the result's statement sent
    /// the message); a broker publishes each, confirmed, their confirms overlapping.
    func announceResults(_ messages: [StepMessage]) async

    /// Publishes a durable domain event's JSON to `queue` (`<ns>_domain_events`).
    func publishEvent(_ json: String, to queue: String) async throws
}

extension StepTransport {
    func settleClaimed(_ deliveries: [StepDelivery]) async {}
    func announceDurably(_ message: StepMessage) async -> Bool { true }
}
