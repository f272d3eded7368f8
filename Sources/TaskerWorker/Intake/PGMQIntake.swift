import AsyncAlgorithms
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TaskerAuth
import TaskerHTTP
import TaskerHandlerSDK
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The PGMQ intake: LISTEN `pgmq_message_ready.<ns>` and the fallback poller, according to the
/// deployment mode; catch-up reads after every (re)connect, dropped events and shedding; no reads
/// while claiming is off or shed. Every reading loop checks `intakeOpen` before each read and each
/// claim. Notifications: `PGMQIntake+Notifications`; notified bursts: `PGMQIntake+Bursts`.
final class PGMQIntake: StepIntake {
    let settings: WorkerEventSystemSettings
    let listener: PostgresListener?
    let executor: StepExecutor
    private let poller: PollSignal
    private let lastPollSucceeded = Atomic<Bool>(true)
    /// Poller passes over every polled queue so far (read or not: none is read while claiming is off).
    private let pollPasses = Atomic<Int>(0)
    private let capacityFreed: WorkerCapacity?
    /// Catch-up reads asked for later (TaskerMessaging's, the orchestration's too).
    let catchUps: CatchUpSchedule
    /// Every PGMQ read of this intake (TaskerMessaging's, the orchestration's too): a failed read
    /// is logged and answered with a catch-up read.
    let reader: QueueReader
    /// What each listener event asks for (shared with the orchestration: `PGMQIntake+Notifications`).
    let notifications: NotificationIntake
    /// Notified message ids waiting for their queue's claimer (`PGMQIntake+Bursts`).
    let bursts = Mutex<[String: NotifiedBurst]>([:])
    let logger: Logger

    init(
        settings: WorkerEventSystemSettings, databaseURL: String, pool: PostgresConnectionPool,
        executor: StepExecutor, capacityFreed: WorkerCapacity? = nil,
        logger: Logger = Logger(label: "tasker.event_system")
    ) {
        self.settings = settings
        self.capacityFreed = capacityFreed
        self.executor = executor
        self.logger = logger
        self.notifications = Self.notificationIntake(
            namespaces: settings.namespaces, statistics: executor.statistics, logger: logger)
        let poller = PollSignal()
        self.poller = poller
        self.catchUps = CatchUpSchedule { poller.catchUp() }
        self.reader = QueueReader(pool: pool, catchUps: catchUps, logger: logger)
        self.listener =
            settings.usesListener
            ? PostgresListener(
                url: databaseURL, channels: notifications.channels,
                backoff: ReconnectBackoff(initial: .milliseconds(100), maximum: settings.listenerRetryInterval),
                keepaliveInterval: settings.listenerKeepalive, connectTimeout: settings.listenerConnectTimeout,
                sessionLimits: pool.configuration.sessionLimits, bufferSize: max(1, settings.listenerBufferSize),
                logger: Logger(label: "tasker.postgres.listener"))
            : nil
    }

    /// Stops listening and polling (the event system closed intake first).
    func stop() {
        listener?.stop()
        poller.finish()
    }

    /// False once shutdown began: every reading loop checks it before each read and each delivery.
    var intakeOpen: Bool { !executor.intakeIsClosed }

    /// Reads the queues now (e.g. after claiming was switched back on).
    func catchUp() { poller.catchUp() }

    func status(_ status: inout WorkerEventSystemStatus) {
        status.listenerState = listener?.state
        status.pollingActive = settings.usesPoller && status.running
        status.lastPollSucceeded = lastPollSucceeded.load(ordering: .relaxed)
        status.pollPasses = pollPasses.load(ordering: .relaxed)
    }

    func run() async {
        let slots = AsyncSemaphore(permits: settings.maxConcurrentDeliveries)
        await withDiscardingTaskGroup { group in
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
    }

    /// Hands a delivery to the executor; a delivery left queued (database trouble, load shedding)
    /// schedules catch-up reads, so that no mode, EventDrivenOnly included, depends on a later
    /// notification to find it: one soon, one after the visibility timeout of a read message.
    func deliver(_ delivery: StepDelivery) async {
        let outcome = await executor.execute(delivery)
        guard outcome == .retryLater || outcome == .shed else { return }
        scheduleRetryReads()
    }

    /// Hands the messages of one poll read to the executor together (their claims share one
    /// transaction); any left queued schedules the catch-up reads, as `deliver` does.
    func deliver(batch deliveries: [StepDelivery]) async {
        let outcomes = await executor.execute(batch: deliveries)
        guard outcomes.contains(.retryLater) || outcomes.contains(.shed) else { return }
        scheduleRetryReads()
    }

    private func scheduleRetryReads() {
        let visibility = max(settings.visibilityTimeoutSeconds, settings.pollVisibilityTimeoutSeconds)
        catchUps.schedule(after: .seconds(1))
        catchUps.schedule(after: .seconds(visibility + 1))
    }

    // MARK: - Poller

    private func pollLoop(slots: AsyncSemaphore) async {
        var timer: Task<Void, Never>?
        if settings.usesPoller {
            let (interval, poller) = (settings.pollInterval, poller)
            timer = Task {
                for await _ in AsyncTimerSequence(interval: interval, clock: .continuous) { poller.tick() }
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
        await poll(slots: slots)
    }

    private func poll(slots: AsyncSemaphore) async {
        for await reason in poller.reasons.cancelOnGracefulShutdown() {
            guard intakeOpen else { return }
            for namespace in settings.polledNamespaces {
                // In Hybrid mode fresh messages belong to the listener; a catch-up reads everything.
                let minAge = settings.mode == .hybrid && reason == .tick ? settings.pollAgeThresholdSeconds : 0
                // `max_age_hours` limits the regular ticks only: a catch-up (start, reconnect, after
                // shedding) reads everything, so no message is left unread for good.
                let maxAge = reason == .tick ? settings.pollMaxAgeSeconds : 0
                await drain(QueueNames.workerQueue(namespace: namespace), minAge: minAge, maxAge: maxAge, slots: slots)
            }
            pollPasses.wrappingAdd(1, ordering: .relaxed)
        }
    }

    /// Reads and delivers batches until the queue has no more visible messages (or work must wait).
    private func drain(_ queue: String, minAge: Int, maxAge: Int, slots: AsyncSemaphore) async {
        let timeout = settings.pollVisibilityTimeoutSeconds
        while intakeOpen {
            let quantity = await readQuantity(upTo: settings.pollBatchSize)
            guard quantity > 0, intakeOpen else { return }
            // A failed read is logged and a catch-up read follows (`QueueReader`).
            guard
                let messages = await reader.read(
                    queue, quantity: quantity, visibilityTimeout: timeout, minAgeSeconds: minAge, maxAgeSeconds: maxAge,
                    lane: .background)
            else {
                lastPollSucceeded.store(false, ordering: .relaxed)
                StepMetrics.pollFailed(queue: queue, in: executor.statistics)
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
        let quantity = min(limit, executor.readCapacity ?? limit)
        guard quantity <= 0 else { return quantity }
        if executor.isAccepting {
            capacityFreed?.recordShed()
            catchUps.schedule(after: .seconds(1))
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
}

/// The poll loop's wake-ups: regular ticks and catch-up requests. The stream keeps the newest
/// request only (a pass reads everything anyway); a tick may replace a buffered catch-up, so a flag
/// keeps the catch-up, which reads without the age filters.
private final class PollSignal: Sendable {
    enum Reason: Sendable { case tick, catchUp }

    private let stream: AsyncStream<Reason>
    private let continuation: AsyncStream<Reason>.Continuation
    private let catchUpWanted = Atomic<Bool>(false)

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Reason.self, bufferingPolicy: .bufferingNewest(1))
    }

    func tick() { continuation.yield(.tick) }

    func catchUp() {
        catchUpWanted.store(true, ordering: .sequentiallyConsistent)
        continuation.yield(.catchUp)
    }

    func finish() { continuation.finish() }

    /// The passes to make, each with its reason (one stream: the poll loop is its only reader).
    var reasons: AsyncMapSequence<AsyncStream<Reason>, Reason> {
        stream.map { [self] signalled in
            catchUpWanted.exchange(false, ordering: .sequentiallyConsistent) ? .catchUp : signalled
        }
    }
}
