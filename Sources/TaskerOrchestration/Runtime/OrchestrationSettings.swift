import TaskerModel

/// How the orchestration reads its queues and discovers ready tasks.
public struct OrchestrationSettings: Sendable, Equatable {
    /// Fallback polling of `orchestration_step_results` and `orchestration_task_requests`
    /// (`common.queues.pgmq.poll_interval_ms`); in between, each LISTEN notification's message is
    /// claimed by id and processed at once.
    public var pollInterval: Duration = .milliseconds(500)
    /// How often `get_next_ready_tasks` is asked for tasks whose backoff has passed.
    public var readinessInterval: Duration = .seconds(1)
    /// Messages processed at once (notified or read), and so the most a read takes.
    public var batchSize = 50
    /// Tasks discovered per readiness pass.
    var readinessBatchSize = 50
    /// Listener events held while the intake is busy; past it events are dropped, counted
    /// (`OrchestrationStatistics.notificationsDropped`) and answered with a read of the queues.
    var listenerBufferSize = 10_000
    /// Visibility timeout of a read message (seconds); unprocessed messages come back after it.
    public var visibilityTimeoutSeconds = 30
    /// LISTEN on `pgmq_message_ready.orchestration` (else polling only).
    public var listen = true
    /// With the queues in a database of their own: how often the steps `enqueued` for at least this
    /// long with no message in any worker queue get their message sent again (at start too;
    /// `OrchestrationQueueDatabase.resendMissing`).
    public var lostMessageSweep: Duration = .seconds(30)
    /// The staleness detector (`[orchestration.dlq]`).
    public var staleness = StalenessDetectionSettings()
    /// The delay of each failed step before it is ready again (`[common.backoff]`; the default is the
    /// base file's).
    public var backoff = BackoffCalculator()

    public init() {}

    /// Settings from the `[common]` and `[orchestration]` configuration.
    public init(configuration: TaskerConfiguration) {
        pollInterval = .milliseconds(max(10, configuration.common.queues.pgmq.pollIntervalMs))
        visibilityTimeoutSeconds = max(1, configuration.common.queues.defaultVisibilityTimeoutSeconds)
        staleness = StalenessDetectionSettings(configuration: configuration.orchestration.dlq)
        backoff = BackoffCalculator(settings: configuration.common.backoff)
        // Behind a transaction pooler without `listen_url`: no LISTEN, the poll ticks read the queues.
        listen = configuration.common.database.listenSessionURL != nil
    }
}
