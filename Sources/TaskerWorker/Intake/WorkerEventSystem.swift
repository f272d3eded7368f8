import AsyncAlgorithms
import Atomics
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TaskerAMQP
import TaskerAuth
import TaskerModel
import TaskerPostgres

/// How the worker learns about step messages (upstream `DeploymentMode` names).
/// `Hybrid`: LISTEN plus the fallback poller; `EventDrivenOnly`: LISTEN (plus one poll after every
/// (re)connect); `PollingOnly`: the poller; `Disabled`: neither.
package struct WorkerEventSystemSettings: Sendable {
    package var mode: WorkerConfiguration.DeploymentMode
    package var namespaces: [String]
    /// Visibility timeout for messages read by id after a `message_ready` notification.
    package var visibilityTimeoutSeconds: Int
    package var pollInterval: Duration
    package var pollBatchSize: Int
    package var pollVisibilityTimeoutSeconds: Int
    /// In Hybrid mode the poller leaves messages younger than this to the listener.
    package var pollAgeThresholdSeconds: Int
    /// `fallback_poller.enabled`: false leaves Hybrid mode to the listener (plus catch-up reads).
    package var pollerEnabled: Bool
    /// Deliveries processed at once.
    package var maxConcurrentDeliveries: Int
    /// Listener reconnect backoff cap (`listener.retry_interval_seconds`); it never gives up.
    package var listenerRetryInterval: Duration = .seconds(5)
    /// Listener connect timeout (`listener.connection_timeout_seconds`).
    package var listenerConnectTimeout: Duration = .seconds(30)
    /// Idle listener liveness check (`timing.health_check_interval_seconds`).
    package var listenerKeepalive: Duration = .seconds(30)
    /// `fallback_poller.max_age_hours` in seconds (0: no limit): regular poll ticks skip older
    /// messages (a message that old usually belongs to a task orchestration's staleness handling
    /// has taken over); catch-up reads — at start, after every listener (re)connect and after
    /// shedding — read every message, so none is left unread for good.
    package var pollMaxAgeSeconds: Int = 0
    /// `fallback_poller.supported_namespaces`: when not empty, the namespaces read by polling and
    /// catch-up (the listener still covers every namespace).
    package var pollNamespaces: [String] = []
    /// `timing.fallback_polling_interval_seconds`: in EventDrivenOnly mode, how often the queues
    /// are read while the listener is disconnected (it is the only source of work then).
    package var disconnectedPollInterval: Duration = .seconds(2)
    /// `mpsc_channels.event_listeners.pgmq_event_buffer_size`: listener events buffered for the
    /// consumer; beyond it the oldest are dropped, counted and followed by a catch-up read.
    package var listenerBufferSize: Int = 10_000
    /// `processing.claim_notified_bursts`: notified messages of a queue that arrive while a claim of
    /// that queue is in flight are read and claimed together after it (`WorkerEventSystem+Bursts`).
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
    var usesPoller: Bool { mode == .pollingOnly || (mode == .hybrid && pollerEnabled) }
}

/// Feeds `StepExecutorActor` from LISTEN/NOTIFY and the fallback poller, according to the
/// deployment mode. On graceful shutdown it closes intake at once (`StepExecutorActor.closeIntake`):
/// every loop that reads or claims — a poll drain under way, catch-up reads, notification reads,
/// the re-read after shedding — checks it before each read and each claim, so no message is read
/// or claimed after the signal; messages already read but not claimed wait out their visibility
/// timeout, and a claim already in its round trip finishes (its steps are drained). Then it waits
/// for the deliveries in progress and finishes the dispatch channel, which lets the rest of the
/// pipeline drain.
package final class WorkerEventSystem: Service, Sendable {
    package let settings: WorkerEventSystemSettings
    package let listener: PostgresListener?
    let pool: PostgresConnectionPool
    let commands: ActorCommandProcessor
    private let dispatch: AsyncChannel<ClaimedStep>
    private let pollSignals: AsyncStream<PollReason>
    private let pollSignal: AsyncStream<PollReason>.Continuation
    private let running = ManagedAtomic<Bool>(false)
    private let lastPollSucceeded = ManagedAtomic<Bool>(true)
    private let onShutdownBegins: @Sendable () -> Void
    private let capacityFreed: WorkerCapacity?
    private let pollFailureLog = Throttle(interval: .seconds(10))
    /// Catch-up reads already scheduled, by whole second since `clockStart`.
    private let pendingCatchUps = Mutex<Set<Int64>>([])
    /// Set by every catch-up request; the poll loop turns its next pass into a catch-up.
    private let catchUpWanted = ManagedAtomic<Bool>(false)
    private let clockStart = ContinuousClock.now
    /// `worker_<ns>_queue` of every served namespace: the only queues a notification may name.
    let servedQueues: Set<String>
    let rejectedNotificationLog = Throttle(interval: .seconds(10))
    let droppedNotificationLog = Throttle(interval: .seconds(10))
    /// The listener's `droppedEvents` already counted and answered with a catch-up read.
    let droppedSeen = ManagedAtomic<Int>(0)
    /// Notified message ids waiting for their queue's claimer (`WorkerEventSystem+Bursts`).
    let bursts = Mutex<[String: NotifiedBurst]>([:])
    let logger: Logger
    /// With RabbitMQ carrying the messages: its consumers replace LISTEN and the poller.
    package let broker: RabbitMQIntake?

    package init(
        settings: WorkerEventSystemSettings, databaseURL: String, pool: PostgresConnectionPool,
        commands: ActorCommandProcessor, dispatch: AsyncChannel<ClaimedStep>,
        capacityFreed: WorkerCapacity? = nil, onShutdownBegins: @escaping @Sendable () -> Void = {},
        broker: RabbitMQIntake? = nil,
        logger: Logger = Logger(label: "tasker.event_system")
    ) {
        self.broker = broker
        self.settings = settings
        self.onShutdownBegins = onShutdownBegins
        self.capacityFreed = capacityFreed
        self.pool = pool
        self.commands = commands
        self.dispatch = dispatch
        self.logger = logger
        self.servedQueues = Set(settings.namespaces.map(QueueNames.workerQueue(namespace:)))
        (pollSignals, pollSignal) = AsyncStream.makeStream(of: PollReason.self, bufferingPolicy: .bufferingNewest(1))
        self.listener =
            settings.usesListener && broker == nil
            ? PostgresListener(
                url: databaseURL, channels: settings.namespaces.map(QueueNames.readyChannel(namespace:)),
                backoff: ReconnectBackoff(initial: .milliseconds(100), maximum: settings.listenerRetryInterval),
                keepaliveInterval: settings.listenerKeepalive, connectTimeout: settings.listenerConnectTimeout,
                sessionLimits: pool.configuration.sessionLimits, bufferSize: max(1, settings.listenerBufferSize),
                logger: Logger(label: "tasker.postgres.listener"))
            : nil
    }

    enum PollReason: Sendable { case tick, catchUp }

    /// Stops listening and polling without waiting for the group's graceful-shutdown signal
    /// (`WorkerDaemon.shutdown()` calls it too, so a stop requested during start-up is never lost).
    /// `run()` then drains and returns as on graceful shutdown.
    package func stop() {
        closeIntake()
        onShutdownBegins()
        capacityFreed?.finish()
        listener?.stop()
        broker?.stop()
        pollSignal.finish()
    }

    /// Shutdown began: no read or claim starts from now on.
    private func closeIntake() {
        commands.actors.stepExecutor.closeIntake()
    }

    /// False once shutdown began: every reading loop checks it before each read and each delivery.
    var intakeOpen: Bool { !commands.actors.stepExecutor.intakeIsClosed }

    /// Reads the queues now (e.g. after claiming was switched back on).
    package func catchUp() {
        catchUpWanted.store(true, ordering: .sequentiallyConsistent)
        pollSignal.yield(.catchUp)
    }

    /// What the health checks read: whether the system runs and whether its sources work.
    package var status: WorkerEventSystemStatus {
        WorkerEventSystemStatus(
            mode: settings.mode, running: running.load(ordering: .relaxed), listenerState: listener?.state,
            pollingActive: broker == nil && settings.usesPoller && running.load(ordering: .relaxed),
            lastPollSucceeded: lastPollSucceeded.load(ordering: .relaxed), namespaces: settings.namespaces,
            brokerState: broker?.broker.connection.state)
    }

    package func run() async {
        running.store(true, ordering: .relaxed)
        defer { running.store(false, ordering: .relaxed) }
        let slots = AsyncSemaphore(permits: settings.maxConcurrentDeliveries)
        // Shutdown starts here (this service is the first the group stops): the drain clock starts.
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                if let broker {
                    // Results a worker committed but died before publishing (see `RabbitMQMessaging`).
                    group.addTask { [pool] in
                        _ = await cancelWhenGracefulShutdown { await broker.broker.republishUnannounced(pool: pool) }
                    }
                    // Push: every delivery through the one command entry, as a notification's message.
                    group.addTask { [commands] in
                        await broker.run { delivery in
                            guard case .delivery(let outcome) = await commands.process(.executeStepFromMessage(delivery)) else {
                                return .retryLater
                            }
                            return outcome
                        }
                    }
                    return
                }
                if let listener {
                    group.addTask { try? await listener.run() }
                    group.addTask { await self.consumeListener(listener, slots: slots) }
                }
                group.addTask { await self.pollLoop(slots: slots) }
                if let capacityFreed {
                    // A permit came free after shedding: read the refused messages now.
                    group.addTask {
                        for await _ in capacityFreed.freed.cancelOnGracefulShutdown() { self.catchUp() }
                    }
                }
            }
        } onGracefulShutdown: { [onShutdownBegins, capacityFreed, commands, broker] in
            commands.actors.stepExecutor.closeIntake()
            onShutdownBegins()
            capacityFreed?.finish()
            broker?.stop()
        }
        await commands.process(.shutdown)
        dispatch.finish()
        logger.info("event system stopped; no further steps will be claimed")
    }

    /// Hands a delivery to the executor; a delivery left queued (database trouble, load shedding)
    /// schedules catch-up reads, so that no mode, EventDrivenOnly included, depends on a later
    /// notification to find it: one soon, one after the visibility timeout of a read message.
    func deliver(_ delivery: StepDelivery) async {
        guard case .delivery(let outcome) = await commands.process(.executeStepFromMessage(delivery)),
            outcome == .retryLater || outcome == .shed
        else { return }
        scheduleRetryReads()
    }

    /// Hands the messages of one poll read to the executor together (their claims share one
    /// transaction); any left queued schedules the catch-up reads, as `deliver` does.
    func deliver(batch deliveries: [StepDelivery]) async {
        guard case .deliveries(let outcomes) = await commands.process(.executeStepsFromMessages(deliveries)),
            outcomes.contains(.retryLater) || outcomes.contains(.shed)
        else { return }
        scheduleRetryReads()
    }

    private func scheduleRetryReads() {
        let visibility = max(settings.visibilityTimeoutSeconds, settings.pollVisibilityTimeoutSeconds)
        scheduleCatchUp(after: .seconds(1))
        scheduleCatchUp(after: .seconds(visibility + 1))
    }

    // MARK: - Poller

    private func pollLoop(slots: AsyncSemaphore) async {
        var timer: Task<Void, Never>?
        if settings.usesPoller {
            let (interval, signal) = (settings.pollInterval, pollSignal)
            timer = Task {
                for await _ in AsyncTimerSequence(interval: interval, clock: .continuous) { signal.yield(.tick) }
            }
            // Catch up on start; EventDrivenOnly catches up when the listener connects.
            catchUp()
        } else if settings.mode == .eventDrivenOnly, let listener {
            // The listener is the only source: while it is down, read the queues at the fallback interval.
            let interval = settings.disconnectedPollInterval
            timer = Task {
                for await _ in AsyncTimerSequence(interval: interval, clock: .continuous) where !listener.state.isConnected {
                    self.catchUp()
                }
            }
        }
        defer { timer?.cancel() }
        await poll(pollSignals, slots: slots)
    }

    private func poll(_ reasons: AsyncStream<PollReason>, slots: AsyncSemaphore) async {
        for await signalled in reasons.cancelOnGracefulShutdown() {
            guard intakeOpen else { return }
            // A tick may have replaced a buffered catch-up (the stream keeps the newest only): the
            // flag keeps the catch-up, which reads without the age filters.
            let reason = catchUpWanted.exchange(false, ordering: .sequentiallyConsistent) ? PollReason.catchUp : signalled
            for namespace in settings.polledNamespaces {
                // In Hybrid mode fresh messages belong to the listener; a catch-up reads everything.
                let minAge = settings.mode == .hybrid && reason == .tick ? settings.pollAgeThresholdSeconds : 0
                // `max_age_hours` limits the regular ticks only: a catch-up (start, reconnect, after
                // shedding) reads everything, so no message is left unread for good.
                let maxAge = reason == .tick ? settings.pollMaxAgeSeconds : 0
                await drain(QueueNames.workerQueue(namespace: namespace), minAge: minAge, maxAge: maxAge, slots: slots)
            }
        }
    }

    /// Reads and delivers batches until the queue has no more visible messages (or work must wait).
    private func drain(_ queue: String, minAge: Int, maxAge: Int, slots: AsyncSemaphore) async {
        let timeout = settings.pollVisibilityTimeoutSeconds
        while intakeOpen {
            let quantity = await readQuantity(upTo: settings.pollBatchSize)
            guard quantity > 0, intakeOpen else { return }
            let messages: [QueueMessage]
            do {
                messages = try await pool.withConnection { c in
                    try await PGMQ.read(
                        c, queue: queue, visibilityTimeout: timeout, quantity: quantity, minAgeSeconds: minAge,
                        maxAgeSeconds: maxAge)
                }
            } catch {
                lastPollSucceeded.store(false, ordering: .relaxed)
                StepMetrics.pollFailed(queue: queue, in: commands.actors.stepExecutor.statistics)
                if pollFailureLog.allow() {
                    logger.warning(
                        "polling failed (repeats are logged at most every 10 s)",
                        metadata: ["queue": "\(queue)", "error": "\(error)"])
                }
                scheduleCatchUp(after: .seconds(1))
                return
            }
            lastPollSucceeded.store(true, ordering: .relaxed)
            // Shutdown began during the read: the messages are not claimed (nor archived); they
            // wait out their visibility timeout.
            guard intakeOpen else {
                leaveUnclaimed(messages.count, queue: queue)
                return
            }
            // The read's messages count against `max_concurrent_operations` like as many deliveries.
            if !messages.isEmpty {
                let held = min(messages.count, slots.limit)
                var taken = 0
                while taken < held, (try? await slots.acquire()) != nil { taken += 1 }
                // Cancelled while waiting for slots (forced shutdown): the messages are left to
                // their visibility timeout.
                if taken == held { await deliver(batch: messages.map(StepDelivery.init(read:))) }
                for _ in 0..<taken { slots.release() }
            }
            if messages.count < quantity { return }
        }
    }

    /// How many messages the next read may take, at most `limit`. Reading hides messages for their
    /// visibility timeout: nothing while claiming is off or intake closed, and no more than can be
    /// claimed before load shedding starts. At the shedding threshold (0 while accepting), the
    /// queues are read again as soon as a permit frees (and, as a safety net, in a second).
    func readQuantity(upTo limit: Int) async -> Int {
        let executor = commands.actors.stepExecutor
        let quantity = min(limit, await executor.readCapacity ?? limit)
        guard quantity <= 0 else { return quantity }
        if await executor.isAccepting {
            capacityFreed?.recordShed()
            scheduleCatchUp(after: .seconds(1))
        }
        return 0
    }

    /// Messages read when shutdown began are left to their visibility timeout.
    func leaveUnclaimed(_ count: Int, queue: String) {
        guard count > 0 else { return }
        logger.info(
            "shutdown began during a read; its messages are not claimed and return after their visibility timeout",
            metadata: ["queue": "\(queue)", "messages": "\(count)"])
    }

    /// Asks for a catch-up read after `delay`, rounded up to the next whole second of this event
    /// system's clock. Requests for the same second share one timer, so a burst of refused
    /// deliveries costs at most one sleeping task per second of delay, not two per delivery.
    func scheduleCatchUp(after delay: Duration) {
        let elapsed = clockStart.duration(to: .now) + delay
        let second = elapsed.components.seconds + (elapsed.components.attoseconds > 0 ? 1 : 0)
        guard pendingCatchUps.withLock({ $0.insert(second).inserted }) else { return }
        let deadline = clockStart.advanced(by: .seconds(second))
        Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            self.pendingCatchUps.withLock { _ = $0.remove(second) }
            self.catchUp()
        }
    }
}

/// A snapshot of the event system for health checks and status endpoints.
package struct WorkerEventSystemStatus: Sendable, Equatable {
    package var mode: WorkerConfiguration.DeploymentMode
    /// True between the start of `run()` and the end of its drain.
    package var running: Bool
    /// The listener's connection state; nil when the mode does not listen (PollingOnly, Disabled).
    package var listenerState: ListenerConnectionState?
    /// True while the fallback poller runs (PollingOnly, or Hybrid with the poller enabled).
    package var pollingActive: Bool
    /// False when the last queue read failed (e.g. the database is unreachable).
    package var lastPollSucceeded: Bool
    package var namespaces: [String]
    /// The broker connection's state when RabbitMQ carries the messages (nil with PGMQ).
    package var brokerState: AMQPConnectionState? = nil

    /// The upstream readiness rule for the event system: running, with its listener connected or
    /// polling active (RabbitMQ: the broker connected).
    package var isReceiving: Bool {
        if let brokerState { return running && brokerState == .connected }
        return running && ((listenerState?.isConnected ?? false) || (pollingActive && lastPollSucceeded))
    }
}
