import Foundation
import Logging
import Synchronization
import TaskerHTTP
import TaskerHandlerSDK
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The values `/metrics` and `/metrics/worker` compute when they are requested, read from a running
/// worker: identity, uptime, pool statistics, PGMQ depth and oldest message age of the worker's own
/// `worker_<ns>_queue`s, channel saturation, event system state and the step statistics.
struct WorkerScrape: Sendable {
    /// One namespace queue's PGMQ metrics.
    struct QueueDepth: Sendable, Equatable {
        package var namespace: String
        package var queue: String
        package var depth: Int64
        /// 0 for an empty queue.
        package var oldestMessageAgeSeconds: Double
    }

    /// One channel's saturation (0…1) and its upstream health level (0 healthy <80 %, 1 degraded
    /// 80–95 %, 2 critical ≥95 %).
    package struct Channel: Sendable, Equatable {
        package var name: String
        package var component: String
        package var used: Int
        package var capacity: Int
        var saturation: Double { capacity <= 0 ? 0 : Double(used) / Double(capacity) }
        var healthLevel: Int { saturation >= 0.95 ? 2 : saturation >= 0.8 ? 1 : 0 }
    }

    package var workerID: String
    package var version: String
    var uptimeSeconds: Double
    package var pool: PostgresPoolStatistics
    package var queues: [QueueDepth]
    /// False when the queue metrics could not be read (database down or slow).
    var queuesRead: Bool
    package var channels: [Channel]
    package var eventSystem: WorkerEventSystemStatus
    package var steps: WorkerStatistics.Snapshot
    /// The FFI dispatch channel's figures, when a foreign runtime is attached.
    package var foreign: ForeignDispatchMetrics? = nil

    /// Reads everything from `runtime`; the queue query gives up after `queueTimeout`, so a scrape
    /// answers even while the database is unreachable.
    static func collect(_ runtime: WorkerRuntime, queueTimeout: Duration = .seconds(2)) async -> WorkerScrape {
        let namespaces = runtime.eventSystem.settings.namespaces
        let pool = runtime.pool
        let queuePool = runtime.queuePool
        let broker = runtime.broker
        let queues: [QueueDepth]?
        if case .value(let depths) = await withDeadline(queueTimeout, { try await queueDepths(queuePool, broker, namespaces: namespaces) })
        {
            queues = depths
        } else {
            queues = nil
        }
        let handlerDispatch = runtime.configuration.worker.mpscChannels.handlerDispatch
        let dispatch = runtime.dispatch
        let channels = [
            Channel(
                name: "worker_dispatch_channel", component: "worker", used: dispatch.capacity.dispatchBacklog,
                capacity: handlerDispatch.dispatchBufferSize),
            Channel(
                name: "worker_handler_permits", component: "worker", used: dispatch.capacity.handlerPermitsInUse,
                capacity: dispatch.capacity.handlerPermits),
            // Process-wide count (one worker per process in production).
            Channel(
                name: "worker_completion_channel", component: "worker",
                used: StepMetrics.completionBacklog,
                capacity: handlerDispatch.completionBufferSize),
        ]
        return WorkerScrape(
            workerID: runtime.identity.publicID, version: TaskerWorkerVersion.current,
            uptimeSeconds: max(0, Date().timeIntervalSince(runtime.startedAt)), pool: await pool.statistics,
            queues: queues ?? [], queuesRead: queues != nil, channels: channels,
            eventSystem: runtime.eventSystem.status, steps: runtime.statistics.snapshot,
            foreign: runtime.dispatch.foreign?.metrics)
    }

    /// `pgmq.metrics` for each namespace's `worker_<ns>_queue` (a missing queue is skipped); with
    /// RabbitMQ the broker's ready messages by passive declare (no age: the broker does not say).
    static func queueDepths(
        _ pool: PostgresConnectionPool, _ broker: RabbitMQMessaging? = nil, namespaces: [String]
    ) async throws -> [QueueDepth] {
        let queues = namespaces.map(QueueNames.workerQueue(namespace:))
        if let broker {
            guard let depths = await broker.queueDepths() else { throw BrokerNotConnected() }
            return queues.map { queue in
                QueueDepth(
                    namespace: QueueNames.namespace(ofWorkerQueue: queue), queue: queue, depth: Int64(depths[queue] ?? 0),
                    oldestMessageAgeSeconds: 0)
            }
        }
        let metrics = try await pool.withConnection(lane: .operator) { c in try await PGMQ.queueMetrics(c, queues: queues) }
        return metrics.map { m in
            QueueDepth(
                namespace: QueueNames.namespace(ofWorkerQueue: m.queue), queue: m.queue, depth: m.depth,
                oldestMessageAgeSeconds: Double(max(0, m.oldestMessageAgeSeconds ?? 0)))
        }
    }

    // MARK: - Prometheus

    /// The scrape-time metric families (upstream names where upstream has them).
    package var families: [MetricFamily] {
        var families: [MetricFamily] = [
            .single(
                "tasker_worker_info", .gauge, help: "Worker information", value: 1,
                labels: [
                    MetricLabel("version", version), MetricLabel("worker_id", workerID),
                    MetricLabel("worker_type", "command_processor"),
                ]),
            .single("tasker_worker_uptime_seconds", .gauge, help: "Worker uptime in seconds", value: uptimeSeconds),
            .single(
                "tasker_worker_db_pool_size", .gauge, help: "Database connection pool size (open connections)",
                value: Double(pool.active + pool.idle)),
            .single("tasker_worker_db_pool_active", .gauge, help: "Pool connections lent out", value: Double(pool.active)),
            .single("tasker_worker_db_pool_idle", .gauge, help: "Pool connections idle", value: Double(pool.idle)),
            .single("tasker_worker_db_pool_max_connections", .gauge, help: "Pool maximum size", value: Double(pool.max)),
            .single("tasker_worker_db_pool_min_connections", .gauge, help: "Pool minimum size", value: Double(pool.min)),
            .single(
                "tasker_worker_db_pool_waiting", .gauge, help: "Callers waiting for a pool connection",
                value: Double(pool.waiting)),
            .single(
                "tasker_worker_db_pool_acquires_total", .counter, help: "Pool connection acquires",
                value: Double(pool.totalAcquires)),
            .single(
                "tasker_worker_db_pool_slow_acquires_total", .counter, help: "Acquires slower than the threshold",
                value: Double(pool.slowAcquires)),
            .single(
                "tasker_worker_db_pool_acquire_errors_total", .counter, help: "Failed acquires",
                value: Double(pool.acquireErrors)),
            .single(
                "tasker_worker_db_pool_connections_opened_total", .counter, help: "Connections opened",
                value: Double(pool.connectionsOpened)),
            .single(
                "tasker_worker_db_pool_connections_replaced_total", .counter, help: "Dead or expired connections replaced",
                value: Double(pool.connectionsReplaced)),
            .single(
                "tasker_worker_db_pool_acquire_avg_seconds", .gauge, help: "Average acquire time in seconds",
                value: pool.averageAcquireMs / 1000),
            .single(
                "tasker_worker_db_pool_acquire_max_seconds", .gauge, help: "Longest acquire time in seconds",
                value: pool.maxAcquireMs / 1000),
        ]
        var depth = MetricFamily(name: "tasker_worker_queue_depth", kind: .gauge, help: "Messages in the namespace's worker queue")
        var age = MetricFamily(
            name: "tasker_worker_queue_oldest_message_age_seconds", kind: .gauge,
            help: "Age of the oldest message in the namespace's worker queue")
        for queue in queues {
            depth.add(Double(queue.depth), labels: [MetricLabel("namespace", queue.namespace)])
            age.add(queue.oldestMessageAgeSeconds, labels: [MetricLabel("namespace", queue.namespace)])
        }
        families += [depth, age]
        var health = MetricFamily(
            name: "tasker_worker_channel_health", kind: .gauge,
            help: "Channel health status (0=healthy, 1=degraded, 2=critical)")
        var saturation = MetricFamily(
            name: "tasker_worker_channel_saturation_ratio", kind: .gauge,
            help: "Channel saturation (used / capacity)")
        for channel in channels {
            let labels = [MetricLabel("channel_name", channel.name), MetricLabel("component", channel.component)]
            health.add(Double(channel.healthLevel), labels: labels)
            saturation.add(channel.saturation, labels: labels)
        }
        families += [health, saturation]
        families.append(
            .single(
                "tasker_worker_event_system_running", .gauge, help: "1 while the event system runs",
                value: eventSystem.running ? 1 : 0))
        families.append(
            .single(
                "tasker_worker_event_system_receiving", .gauge,
                help: "1 while the listener is connected or polling works", value: eventSystem.isReceiving ? 1 : 0))
        return families + (foreign?.families ?? [])
    }

    // MARK: - JSON

    /// `/metrics/worker`'s `metrics` object: upstream keys (`uptime_seconds`, `database_pool_size`,
    /// `queue_depth_<ns>`, `queue_oldest_message_age_<ns>`) plus pool, channel and step figures.
    var jsonMetrics: [String: WorkerMetricValue] {
        var metrics: [String: WorkerMetricValue] = [
            "uptime_seconds": .init(uptimeSeconds, "counter", help: "Worker uptime in seconds"),
            "database_pool_size": .init(Double(pool.active + pool.idle), help: "Database connection pool size"),
            "database_pool_active": .init(Double(pool.active), help: "Pool connections lent out"),
            "database_pool_idle": .init(Double(pool.idle), help: "Pool connections idle"),
            "database_pool_max": .init(Double(pool.max), help: "Pool maximum size"),
            "database_pool_waiting": .init(Double(pool.waiting), help: "Callers waiting for a pool connection"),
            "steps_total_executed": .init(Double(steps.totalExecuted), "counter", help: "Step results produced"),
            "steps_total_succeeded": .init(Double(steps.totalSucceeded), "counter", help: "Steps that succeeded"),
            "steps_total_failed": .init(Double(steps.totalFailed), "counter", help: "Steps that failed"),
            "steps_average_execution_time_ms": .init(steps.averageExecutionTimeMs, help: "Average claim-to-stored time in ms"),
            "steps_claimed": .init(Double(steps.claimed), "counter", help: "Steps claimed"),
            "steps_claims_lost": .init(Double(steps.claimsLost), "counter", help: "Claims lost to another worker"),
            "steps_poison_messages": .init(Double(steps.poisonMessages), "counter", help: "Poison messages archived"),
            "steps_stale_messages": .init(Double(steps.staleMessages), "counter", help: "Stale messages archived"),
            "steps_shed_claims": .init(Double(steps.shedClaims), "counter", help: "Deliveries left queued by load shedding"),
            "steps_completion_retries": .init(Double(steps.completionRetries), "counter", help: "Retried result stores"),
            "steps_claims_recovered": .init(
                Double(steps.claimsRecovered), "counter",
                help: "Claims found committed after their answer was lost"),
            "steps_claims_refused_for_lease": .init(
                Double(steps.claimsRefusedForLease), "counter",
                help: "Claims the database refused: this worker's liveness lease had expired or was about to"),
            "steps_completions_recovered": .init(
                Double(steps.completionsRecovered), "counter",
                help: "Results found stored after their answer was lost"),
            "steps_failure_rate": .init(steps.failureRate, help: "Failed / executed"),
            "notifications_rejected": .init(
                Double(steps.notificationsRejected), "counter",
                help: "Notifications ignored: malformed or naming a queue not served"),
            "notifications_dropped": .init(
                Double(steps.notificationsDropped), "counter",
                help: "Notifications lost to a full listener buffer (a catch-up read follows)"),
            "deliveries_refused": .init(
                Double(steps.deliveriesRefused), "counter",
                help: "Deliveries refused: their queue is not this worker's"),
            "steps_recovered": .init(
                Double(steps.stepsRecovered), "counter",
                help: "Steps of lost workers given a retryable worker_lost result by this worker"),
            "steps_late_results_refused": .init(
                Double(steps.lateResultsRefused), "counter",
                help: "Results not stored because the step was no longer in_progress"),
        ]
        for queue in queues {
            let labels = ["namespace": queue.namespace]
            metrics["queue_depth_\(queue.namespace)"] = .init(
                Double(queue.depth), labels: labels,
                help: "Queue depth for \(queue.namespace) namespace")
            metrics["queue_oldest_message_age_\(queue.namespace)"] = .init(
                queue.oldestMessageAgeSeconds, labels: labels, help: "Age of oldest message in \(queue.namespace) queue")
        }
        for channel in channels {
            metrics["channel_health_\(channel.name)"] = .init(
                Double(channel.healthLevel), labels: ["channel_name": channel.name, "component": channel.component],
                help: "Channel health status (0=healthy, 1=degraded, 2=critical)")
        }
        metrics.merge(foreign?.workerMetrics ?? [:]) { current, _ in current }
        return metrics
    }
}

/// One entry of `/metrics/worker` (upstream `MetricValue`).
package struct WorkerMetricValue: Codable, Sendable, Equatable {
    package var value: Double
    var metricType: String
    package var labels: [String: String]
    package var help: String

    package init(_ value: Double, _ metricType: String = "gauge", labels: [String: String] = [:], help: String) {
        self.value = value
        self.metricType = metricType
        self.labels = labels
        self.help = help
    }

    enum CodingKeys: String, CodingKey {
        case value, labels, help
        case metricType = "metric_type"
    }

    /// `value` as a float (`4.0`), as upstream writes its `f64`.
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(JSONFloat(value), forKey: .value)
        try c.encode(metricType, forKey: .metricType)
        try c.encode(labels, forKey: .labels)
        try c.encode(help, forKey: .help)
    }
}
