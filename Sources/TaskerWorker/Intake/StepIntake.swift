import TaskerStore

/// Where step messages come from, one per transport: `PGMQIntake` (LISTEN/NOTIFY and the fallback
/// poller on PGMQ) or `RabbitMQIntake` (a consumer per namespace queue). `WorkerEventSystem` runs the
/// one the transport chose and owns what both share: the start and end of intake, the drain at
/// shutdown. An intake hands every message to the `StepExecutor` as a `StepDelivery` and settles
/// nothing itself before the executor's outcome says so.
protocol StepIntake: Sendable {
    /// Takes in messages until `stop()` or graceful shutdown, then returns once the deliveries in
    /// progress are settled.
    func run() async

    /// Stops taking messages (shutdown: no read, claim or delivery starts from now on).
    func stop()

    /// Reads the queues now (after claiming was switched back on); nothing where messages are pushed.
    func catchUp()

    /// The intake's part of the event system's status (`running` is the event system's).
    func status(_ status: inout WorkerEventSystemStatus)
}
