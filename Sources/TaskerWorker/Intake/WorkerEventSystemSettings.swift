import TaskerHandlerSDK
import TaskerModel

/// How the worker learns about step messages (upstream `DeploymentMode` names).
/// `Hybrid`: LISTEN plus the fallback poller; `EventDrivenOnly`: LISTEN (plus one poll after every
/// (re)connect); `PollingOnly`: the poller; `Disabled`: neither.
package struct WorkerEventSystemSettings: Sendable {
    package var mode: WorkerConfiguration.DeploymentMode
    package var namespaces: [String]
    /// Visibility timeout for messages read by id after a `message_ready` notification.
    package var visibilityTimeoutSeconds: Int
    package var pollInterval: Duration
    var pollBatchSize: Int
    var pollVisibilityTimeoutSeconds: Int
    /// In Hybrid mode the poller leaves messages younger than this to the listener.
    var pollAgeThresholdSeconds: Int
    /// `fallback_poller.enabled`: false leaves Hybrid mode to the listener (plus catch-up reads).
    var pollerEnabled: Bool
    /// Deliveries processed at once.
    var maxConcurrentDeliveries: Int
    /// Listener reconnect backoff cap (`listener.retry_interval_seconds`); it never gives up.
    var listenerRetryInterval: Duration = .seconds(5)
    /// Listener connect timeout (`listener.connection_timeout_seconds`).
    var listenerConnectTimeout: Duration = .seconds(30)
    /// Idle listener liveness check (`timing.health_check_interval_seconds`).
    var listenerKeepalive: Duration = .seconds(30)
    /// `fallback_poller.max_age_hours` in seconds (0: no limit): regular poll ticks skip older
    /// messages (a message that old usually belongs to a task orchestration's staleness handling
    /// has taken over); catch-up reads — at start, after every listener (re)connect and after
    /// shedding — read every message, so none is left unread for good.
    var pollMaxAgeSeconds: Int = 0
    /// `fallback_poller.supported_namespaces`: when not empty, the namespaces read by polling and
    /// catch-up (the listener still covers every namespace).
    var pollNamespaces: [String] = []
    /// `timing.fallback_polling_interval_seconds`: in EventDrivenOnly mode, how often the queues
    /// are read while the listener is disconnected (it is the only source of work then).
    var disconnectedPollInterval: Duration = .seconds(2)
    /// `mpsc_channels.event_listeners.pgmq_event_buffer_size`: listener events buffered for the
    /// consumer; beyond it the oldest are dropped, counted and followed by a catch-up read.
    var listenerBufferSize: Int = 10_000
    /// `processing.claim_notified_bursts`: notified messages of a queue that arrive while a claim of
    /// that queue is in flight are read and claimed together after it (`PGMQIntake+Bursts`).
    package var claimNotifiedBursts = true

    /// The namespaces the poller reads.
    var polledNamespaces: [String] {
        pollNamespaces.isEmpty ? namespaces : namespaces.filter(pollNamespaces.contains)
    }

    package init(
        mode: WorkerConfiguration.DeploymentMode, namespaces: [String], visibilityTimeoutSeconds: Int = 30,
        pollInterval: Duration = .seconds(1), pollBatchSize: Int = 20, pollVisibilityTimeoutSeconds: Int = 30,
        pollAgeThresholdSeconds: Int = 5, pollerEnabled: Bool = true, maxConcurrentDeliveries: Int = 32
    ) {
        self.mode = mode
        self.namespaces = namespaces
        self.visibilityTimeoutSeconds = visibilityTimeoutSeconds
        self.pollInterval = pollInterval
        self.pollBatchSize = pollBatchSize
        self.pollVisibilityTimeoutSeconds = pollVisibilityTimeoutSeconds
        self.pollAgeThresholdSeconds = pollAgeThresholdSeconds
        self.pollerEnabled = pollerEnabled
        self.maxConcurrentDeliveries = maxConcurrentDeliveries
    }

    var usesListener: Bool { mode == .hybrid || mode == .eventDrivenOnly }

    /// These settings with no LISTEN session to use (`common.database.transaction_pooler` without a
    /// `listen_url`): Hybrid and EventDrivenOnly become PollingOnly, at the poller's interval (the
    /// fallback interval for EventDrivenOnly, whose poller may be off), reading every message
    /// whatever its age: none is left to a listener. PollingOnly and Disabled are unchanged.
    var withoutListener: WorkerEventSystemSettings {
        var settings = self
        switch mode {
        case .hybrid:
            settings.mode = .pollingOnly
        case .eventDrivenOnly:
            settings.mode = .pollingOnly
            if !pollerEnabled { settings.pollInterval = disconnectedPollInterval }
        case .pollingOnly, .disabled:
            break
        }
        settings.pollerEnabled = true
        return settings
    }
    var usesPoller: Bool { mode == .pollingOnly || (mode == .hybrid && pollerEnabled) }
}
