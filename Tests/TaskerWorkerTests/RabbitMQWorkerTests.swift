import Foundation
import NIOCore
import TaskerAMQP
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// The worker with `[common.queues] backend = "rabbitmq"` against the real broker of `scripts/test`
/// and the real PostgreSQL: push intake with the ack after the claim's commit, poison acked and
/// counted, results published (confirmed) after their commit and retried across a lost connection,
/// the start-up re-publish of results a dead worker never published, and queues upstream's way.
/// Serialized: the tests share `orchestration_step_results` on the broker.
@Suite("Worker on RabbitMQ", .serialized, BrokerEnvironment.available, .timeLimit(.minutes(2)))
struct RabbitMQWorkerTests {
    @Test func aStepMessageIsClaimedRunAndItsResultPublishedAfterItsCommit() async throws {
        try await withTestDatabase { db in
            let namespace = Self.namespace()
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml(namespace))
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.work") { _ in .success(["done": true]) }
            let worker = harness.startWorker(handlers, configuration: try Self.configuration(harness))
            try await Self.withBroker { channel in
                let task = try await harness.createTask(steps: ["work"])
                try await harness.transition(task["work"], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
                let queue = QueueNames.workerQueue(namespace: namespace)
                try await Self.publish(Self.stepMessage(task, "work"), to: queue, on: channel)
                try await harness.waitForState(task["work"], ["enqueued_for_orchestration"])
                #expect(try await harness.result(task["work"]).success)

                let published = try #require(try await Self.takeResult(for: task["work"], on: channel))
                #expect(published.properties.deliveryMode == 2 && published.properties.contentType == "application/json")
                let message = try JSONDecoder().decode(StepMessage.self, from: Data(published.body.readableBytesView))
                #expect(message.stepUUID == task["work"] && message.taskUUID == task.taskUUID)
                // The transport is the broker's only: nothing went through PGMQ.
                let pgmq: Int = try await harness.admin.query(
                    "SELECT (SELECT count(*) FROM pgmq.q_orchestration_step_results) + (SELECT count(*) FROM pgmq.a_orchestration_step_results) AS n"
                )[0].decode("n")
                #expect(pgmq == 0)
                #expect(try Self.broker(worker).publishCounts.published == 1)
                // The durable domain event went to `<ns>_domain_events` on the broker, after the result.
                let events = QueueNames.domainEvents(namespace: namespace)
                var event: AMQPGetResult?
                _ = try await eventually(within: .seconds(10)) {
                    event = try await channel.get(queue: events)
                    return event != nil
                }
                let delivered = try #require(event).delivery
                try await channel.ack(deliveryTag: delivered.deliveryTag)
                #expect(String(buffer: delivered.body).contains("rmq.done") && delivered.properties.deliveryMode == 2)
                // Acked: the worker's queue is empty, also once its connection is gone.
                try await worker.stop()
                #expect(try await channel.inspectQueue(queue).messageCount == 0)
                // The queue the worker declared is accepted by a client declaring it upstream's way.
                #expect(try await Self.declareWithPika(queue).contains("declared"))
            }
        }
    }

    @Test func theDeliveryIsAckedOnlyAfterTheClaimCommits() async throws {
        try await withTestDatabase { db in
            let namespace = Self.namespace()
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml(namespace))
            let runs = InvocationCounter()
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.work") { context in
                runs.record(context.stepUUID)
                return .success(["done": true])
            }
            var configuration = try Self.configuration(harness)
            configuration.common.database.lockTimeoutMs = 60_000
            configuration.worker.eventSystems.worker.timing.claimTimeoutSeconds = 60
            let worker = harness.startWorker(handlers, configuration: configuration)
            try await Self.withBroker { channel in
                let task = try await harness.createTask(steps: ["work"])
                try await harness.transition(task["work"], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
                // Hold the step's transition row: the claim blocks on it, uncommitted.
                let holder = try await db.connect()
                try await holder.execute("BEGIN")
                try await holder.query(
                    "SELECT 1 AS held FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1 FOR UPDATE", [task["work"]])
                let queue = QueueNames.workerQueue(namespace: namespace)
                try await Self.publish(Self.stepMessage(task, "work"), to: queue, on: channel)
                try await waitUntil(timeout: .seconds(15)) { try await Self.claimsWaiting(harness) >= 1 }
                // Not acked while the claim waits: with the worker's connection closed, the delivery
                // returns to the queue and comes to the worker again on its next connection (left
                // for later while the first claim is in flight: the step is busy).
                let broker = try Self.broker(worker)
                #expect(try await BrokerEnvironment.forceClose(connectionsNamed: Self.connectionName(worker)) == 1)
                try await waitUntil(timeout: .seconds(15)) { broker.connection.generation >= 2 && broker.isConnected }
                try await holder.execute("ROLLBACK")
                await holder.close()
                try await harness.waitForState(task["work"], ["enqueued_for_orchestration"])
                // Claimed once; the redelivered copy found the step moved on (stale) and was acked.
                try await waitUntil(timeout: .seconds(15)) { worker.daemon.statistics.snapshot.staleMessages == 1 }
                #expect(runs.count(task["work"]) == 1)
                let claims = try await harness.transitions(task["work"]).filter { $0.to == "in_progress" }
                #expect(claims.count == 1)
                _ = try await Self.takeResult(for: task["work"], on: channel)
                try await worker.stop()
                #expect(try await channel.inspectQueue(queue).messageCount == 0)
            }
        }
    }

    @Test func aClaimThatFailsTransientlyIsRequeuedAndClaimedLater() async throws {
        try await withTestDatabase { db in
            let namespace = Self.namespace()
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml(namespace))
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.work") { _ in .success(["done": true]) }
            // Claims give up on a held lock after 100 ms (55P03): a transient failure.
            var configuration = try Self.configuration(harness)
            configuration.common.database.lockTimeoutMs = 100
            let worker = harness.startWorker(handlers, configuration: configuration)
            try await Self.withBroker { channel in
                let task = try await harness.createTask(steps: ["work"])
                try await harness.transition(task["work"], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
                let holder = try await db.connect()
                try await holder.execute("BEGIN")
                try await holder.query(
                    "SELECT 1 AS held FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1 FOR UPDATE", [task["work"]])
                let queue = QueueNames.workerQueue(namespace: namespace)
                try await Self.publish(Self.stepMessage(task, "work"), to: queue, on: channel)
                let failed = {
                    worker.daemon.statistics.counters.current.total(
                        StepMetrics.Name.failures, where: "error_type", is: StepMetrics.FailureType.databaseError.rawValue)
                }
                // Failed, nacked with requeue after a backoff, redelivered, failed again: not lost.
                try await waitUntil(timeout: .seconds(15)) { failed() >= 2 }
                try await holder.execute("ROLLBACK")
                await holder.close()
                try await harness.waitForState(task["work"], ["enqueued_for_orchestration"])
                #expect(try await harness.transitions(task["work"]).filter { $0.to == "in_progress" }.count == 1)
                _ = try await Self.takeResult(for: task["work"], on: channel)
                try await worker.stop()
                #expect(try await channel.inspectQueue(queue).messageCount == 0)
            }
        }
    }

    @Test func poisonDeliveriesAreAckedAndCounted() async throws {
        try await withTestDatabase { db in
            let namespace = Self.namespace()
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml(namespace))
            let worker = harness.startWorker(.withBuiltIns(), configuration: try Self.configuration(harness))
            try await Self.withBroker { channel in
                let queue = QueueNames.workerQueue(namespace: namespace)
                try await Self.publish("not json {", to: queue, on: channel)
                let missing = StepMessage(taskUUID: UUID(), stepUUID: UUID(), correlationID: UUID())
                try await Self.publish(missing.jsonString(), to: queue, on: channel)
                // Over the delivery limit: dropped unread and settled as poison (it used to end the
                // worker's connection, and the broker redelivered it to every reconnect, forever).
                let oversize = String(repeating: "x", count: Int(RabbitMQMessaging.maximumDeliveryBytes) + 1)
                try await Self.publish(oversize, to: queue, on: channel)
                try await waitUntil(timeout: .seconds(15)) { worker.daemon.statistics.snapshot.poisonMessages == 3 }
                try await worker.stop()
                // Acked, not merely held: nothing returns to the queue when the worker's connection closes.
                #expect(try await channel.inspectQueue(queue).messageCount == 0)
                #expect(try await channel.inspectQueue("\(queue)_dlq").messageCount == 0)
            }
        }
    }

    @Test func aPublishFailingAfterTheCommitIsRetriedUntilConfirmed() async throws {
        try await withTestDatabase { db in
            let namespace = Self.namespace()
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml(namespace))
            let (entered, released) = (TestFlag(), TestFlag())
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.work") { _ in
                entered.set(true)
                for _ in 0..<2000 where !released.value { try? await Task.sleep(for: .milliseconds(5)) }
                return .success(["done": true])
            }
            let worker = harness.startWorker(handlers, configuration: try Self.configuration(harness))
            try await Self.withBroker { channel in
                let task = try await harness.createTask(steps: ["work"])
                try await harness.transition(task["work"], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
                try await Self.publish(Self.stepMessage(task, "work"), to: QueueNames.workerQueue(namespace: namespace), on: channel)
                try await waitUntil(timeout: .seconds(15)) { entered.value }
                // The broker drops the worker's connection while the handler runs: the result is
                // committed while the worker is disconnected, and its publish must wait and retry.
                let broker = try Self.broker(worker)
                #expect(try await BrokerEnvironment.forceClose(connectionsNamed: Self.connectionName(worker)) == 1)
                try await waitUntil(timeout: .seconds(5)) { !broker.isConnected }
                released.set(true)
                try await harness.waitForState(task["work"], ["enqueued_for_orchestration"])
                #expect(try await Self.takeResult(for: task["work"], on: channel) != nil)
                #expect(broker.publishCounts.retries >= 1 && broker.publishCounts.published == 1)
                // One result row: the retry was of the publish only.
                let stored = try await harness.transitions(task["work"]).filter { $0.to == "enqueued_for_orchestration" }
                #expect(stored.count == 1)
                try await worker.stop()
            }
        }
    }

    @Test func resultsADeadWorkerNeverPublishedArePublishedAtStart() async throws {
        try await withTestDatabase { db in
            let namespace = Self.namespace()
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml(namespace))
            // A step a previous worker stored its result for, then died before publishing it.
            let task = try await harness.createTask(steps: ["work"])
            let step = task["work"]
            try await harness.transition(step, from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
            try await harness.transition(step, from: "enqueued", to: "in_progress", event: #"{"type":"Start"}"#)
            let metadata = #"{"event":"{}","worker_uuid":"\#(UUID().uuidString.lowercased())"}"#
            try await SchemaTests.transition(
                harness.admin, step: step, from: "in_progress", to: "enqueued_for_orchestration", metadata: metadata)
            try await Self.withBroker { channel in
                let worker = harness.startWorker(.withBuiltIns(), configuration: try Self.configuration(harness))
                #expect(try await Self.takeResult(for: step, on: channel) != nil)
                try await worker.stop()
            }
        }
    }

    /// A crash-looping worker does not re-publish the same results at every start: the first start
    /// re-publishes the result (confirmed) and marks its transition `republished_at`; the next starts
    /// find nothing to re-publish.
    @Test func aResultIsRePublishedByOneStartNotByEveryStartOfACrashLoopingWorker() async throws {
        try await withTestDatabase { db in
            let namespace = Self.namespace()
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml(namespace))
            let task = try await harness.createTask(steps: ["work"])
            let step = task["work"]
            try await harness.transition(step, from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
            try await harness.transition(step, from: "enqueued", to: "in_progress", event: #"{"type":"Start"}"#)
            let metadata = #"{"event":"{}","worker_uuid":"\#(UUID().uuidString.lowercased())"}"#
            try await SchemaTests.transition(
                harness.admin, step: step, from: "in_progress", to: "enqueued_for_orchestration", metadata: metadata)
            let settings = try Self.configuration(harness).common.queues.rabbitmq
            let pool = db.pool(maxConnections: 2)
            try await Self.withBroker { channel in
                for start in 1...3 {
                    // Each start of the worker: a new broker connection and its start-up re-publish.
                    let messaging = RabbitMQMessaging(
                        settings: settings, namespaces: [namespace], connectionName: BrokerEnvironment.uniqueName("rmq-crash-loop"))
                    let running = Task { try await messaging.run() }
                    let republished = await messaging.republishUnannounced(pool: pool)
                    running.cancel()
                    _ = try? await running.value
                    #expect(republished == (start == 1 ? 1 : 0), "start \(start) re-published \(republished)")
                }
                #expect(try await Self.takeResult(for: step, on: channel) != nil)
                let marked: Bool = try await harness.admin.query(
                    """
                    SELECT metadata ? 'republished_at' AND metadata ? 'worker_uuid' AS marked
                      FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1 AND most_recent
                    """, [step])[0].decode("marked")
                #expect(marked)
            }
            await pool.close()
        }
    }

    @Test func crashRecoveryPublishesTheWorkerLostResultToTheBroker() async throws {
        try await withTestDatabase { db in
            let namespace = Self.namespace()
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml(namespace))
            var configuration = try Self.configuration(harness)
            configuration.worker.crashRecovery.scanIntervalMs = 100
            configuration.worker.crashRecovery.gracePeriodMs = 1000
            // A step claimed by a worker that is gone (no liveness lock held for it).
            let task = try await harness.createTask(steps: ["work"])
            let step = task["work"]
            try await harness.transition(step, from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
            let metadata = #"{"event":"{}","worker_uuid":"\#(UUID().uuidString.lowercased())"}"#
            try await SchemaTests.transition(harness.admin, step: step, from: "enqueued", to: "in_progress", metadata: metadata)
            try await Self.withBroker { channel in
                let worker = harness.startWorker(.withBuiltIns(), configuration: configuration)
                try await harness.waitForState(step, ["enqueued_as_error_for_orchestration"])
                #expect(try await harness.result(step).error?.errorType == "worker_lost")
                #expect(try await Self.takeResult(for: step, on: channel) != nil)
                let pgmq: Int = try await harness.admin.query("SELECT count(*) AS n FROM pgmq.q_orchestration_step_results")[0].decode("n")
                #expect(pgmq == 0)
                try await worker.stop()
            }
        }
    }

    @Test func drainReturnsTheDeliveriesNotClaimedToTheQueueAndFinishesTheClaimedStep() async throws {
        try await withTestDatabase { db in
            let namespace = Self.namespace()
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml(namespace))
            let (entered, released) = (TestFlag(), TestFlag())
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.work") { _ in
                entered.set(true)
                for _ in 0..<2000 where !released.value { try? await Task.sleep(for: .milliseconds(5)) }
                return .success(["done": true])
            }
            // One handler permit: with load shedding, one step is claimed and the others are left for later.
            var configuration = try Self.configuration(harness)
            configuration.worker.mpscChannels.handlerDispatch.maxConcurrentHandlers = 1
            let worker = harness.startWorker(handlers, configuration: configuration)
            try await Self.withBroker { channel in
                let task = try await harness.createTask(steps: ["work", "second", "third"])
                let queue = QueueNames.workerQueue(namespace: namespace)
                for step in ["work", "second", "third"] {
                    try await harness.transition(task[step], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
                    try await Self.publish(Self.stepMessage(task, step), to: queue, on: channel)
                }
                try await waitUntil(timeout: .seconds(15)) { entered.value }
                let stopping = Task { try await worker.stop() }
                // While the claimed step still runs, the deliveries not claimed are back in the queue.
                let steps = ["work", "second", "third"].map { task[$0] }
                func waiting() async throws -> Int {
                    var count = 0
                    for step in steps where try await harness.state(step) == "enqueued" { count += 1 }
                    return count
                }
                // (Well before the handler gives up waiting by itself after 10 s.)
                try await waitUntil(timeout: .seconds(5)) { try await channel.inspectQueue(queue).messageCount == 2 }
                #expect(try await waiting() == 2)
                released.set(true)
                try await stopping.value
                // Drained: the running step's result is stored and published; nothing was lost or acked unclaimed.
                var finished = 0
                for step in steps where try await harness.state(step) == "enqueued_for_orchestration" { finished += 1 }
                #expect(finished == 1)
                #expect(try await channel.inspectQueue(queue).messageCount == 2)
            }
        }
    }

    @Test func healthAndMetricsReportTheBrokerAndItsQueueDepths() async throws {
        try await withTestDatabase { db in
            let namespace = Self.namespace()
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml(namespace))
            let queue = QueueNames.workerQueue(namespace: namespace)
            // A message left in the PGMQ queue of the same name: with RabbitMQ carrying the messages,
            // the depth reported is the broker's (0), not PGMQ's (1).
            _ = try await PGMQ.sendWithNotify(harness.admin, queue: queue, message: PostgresJSON(raw: #"{"unused":true}"#))
            let worker = harness.startWorker(.withBuiltIns(), configuration: try Self.configuration(harness))
            let broker = try Self.broker(worker)
            try await waitUntil(timeout: .seconds(15)) { broker.isConnected && worker.daemon.runtime.eventSystem.status.running }
            let status = worker.daemon.runtime.eventSystem.status
            #expect(status.brokerState == .connected && status.isReceiving && status.listenerState == nil && !status.pollingActive)
            let health = WorkerHealthService(runtime: worker.daemon.runtime)
            #expect(health.checkEventSystem().message?.contains("RabbitMQ connected") == true)
            let depth = await health.checkQueueProcessing()
            #expect(depth.message == "Own queues total depth: 0 (\(queue)=0)", "\(depth)")
            let scrape = await WorkerScrape.collect(worker.daemon.runtime)
            #expect(scrape.queuesRead && scrape.queues.map(\.queue) == [queue] && scrape.queues.map(\.depth) == [0])
            try await worker.stop()
        }
    }
}
