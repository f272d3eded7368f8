import AsyncAlgorithms
import Logging
import ServiceLifecycle
import Synchronization
import TaskerAMQP
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The intake stage as a `Service`: runs the transport's `StepIntake` (`PGMQIntake` or
/// `RabbitMQIntake`) and owns its start and end. On graceful shutdown it closes intake at once
/// (`StepExecutor.closeIntake`): every loop that reads or claims checks it before each read and
/// each claim, so no message is read or claimed after the signal; messages already read but not
/// claimed wait out their visibility timeout (PGMQ) or go back unacked (a broker), and a claim
/// already in its round trip finishes (its steps are drained). Then it waits for the deliveries in
/// progress and finishes the dispatch channel, which lets the rest of the pipeline drain.
package final class WorkerEventSystem: Service, Sendable {
    package let settings: WorkerEventSystemSettings
    /// The transport's intake.
    let intake: any StepIntake
    let executor: StepExecutor
    private let dispatch: AsyncChannel<ClaimedStep>
    private let running = Atomic<Bool>(false)
    private let onShutdownBegins: @Sendable () -> Void
    private let capacityFreed: WorkerCapacity?
    let logger: Logger

    init(
        settings: WorkerEventSystemSettings, intake: any StepIntake, executor: StepExecutor,
        dispatch: AsyncChannel<ClaimedStep>, capacityFreed: WorkerCapacity? = nil,
        onShutdownBegins: @escaping @Sendable () -> Void = {}, logger: Logger = Logger(label: "tasker.event_system")
    ) {
        self.settings = settings
        self.intake = intake
        self.executor = executor
        self.dispatch = dispatch
        self.capacityFreed = capacityFreed
        self.onShutdownBegins = onShutdownBegins
        self.logger = logger
    }

    /// Stops intake without waiting for the group's graceful-shutdown signal
    /// (`WorkerDaemon.shutdown()` calls it too, so a stop requested during start-up is never lost).
    /// `run()` then drains and returns as on graceful shutdown.
    package func stop() {
        executor.closeIntake()
        onShutdownBegins()
        capacityFreed?.finish()
        intake.stop()
    }

    /// False once shutdown began: every reading loop checks it before each read and each delivery.
    var intakeOpen: Bool { !executor.intakeIsClosed }

    /// Reads the queues now (e.g. after claiming was switched back on).
    package func catchUp() { intake.catchUp() }

    /// What the health checks read: whether the system runs and whether its sources work.
    package var status: WorkerEventSystemStatus {
        var status = WorkerEventSystemStatus(
            mode: settings.mode, running: running.load(ordering: .relaxed), listenerState: nil, pollingActive: false,
            lastPollSucceeded: true, namespaces: settings.namespaces)
        intake.status(&status)
        return status
    }

    package func run() async {
        running.store(true, ordering: .relaxed)
        defer { running.store(false, ordering: .relaxed) }
        // Shutdown starts here (this service is the first the group stops): the drain clock starts.
        await withGracefulShutdownHandler {
            await intake.run()
        } onGracefulShutdown: { [self] in
            stop()
        }
        executor.closeIntake()
        executor.setAccepting(false)
        dispatch.finish()
        logger.info("event system stopped; no further steps will be claimed")
    }
}

/// A snapshot of the event system for health checks and status endpoints.
package struct WorkerEventSystemStatus: Sendable, Equatable {
    package var mode: WorkerConfiguration.DeploymentMode
    /// True between the start of `run()` and the end of its drain.
    package var running: Bool
    /// The listener's connection state; nil when the mode does not listen (PollingOnly, Disabled).
    var listenerState: ListenerConnectionState?
    /// True while the fallback poller runs (PollingOnly, or Hybrid with the poller enabled).
    var pollingActive: Bool
    /// False when the last queue read failed (e.g. the database is unreachable).
    var lastPollSucceeded: Bool
    /// The poller's passes over its queues since the start (0 without a poller).
    var pollPasses: Int = 0
    package var namespaces: [String]
    /// The broker connection's state when RabbitMQ carries the messages (nil with PGMQ).
    var brokerState: AMQPConnectionState? = nil

    /// The upstream readiness rule for the event system: running, with its listener connected or
    /// polling active (RabbitMQ: the broker connected).
    package var isReceiving: Bool {
        if let brokerState { return running && brokerState == .connected }
        return running && ((listenerState?.isConnected ?? false) || (pollingActive && lastPollSucceeded))
    }
}
