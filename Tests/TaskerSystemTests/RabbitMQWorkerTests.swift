import Foundation
import NIOCore
import TaskerAMQP
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// The worker with `[common.queues] backend = "rabbitmq"` against the real broker of `scripts/test`
/// and the real PostgreSQL: push intake with the ack after the claim's commit, poison acked and
/// counted, results published (confirmed) after their commit and retried across a lost connection,
/// the start-up re-publish of results a dead worker never published, and queues upstream's way.
/// Serialized: the tests share `orchestration_step_results` (and the orchestration tests in the
/// extensions `worker_examples_queue`) on the broker. Setup lives in `+Broker` (`BrokerScenario`).
@Suite("Worker on RabbitMQ", .serialized, BrokerEnvironment.available, .timeLimit(.minutes(2)))
struct RabbitMQWorkerTests {
    @Test func aStepMessageIsClaimedRunAndItsResultPublishedAfterItsCommit() async throws {
        try await Self.scenario { s in
            let worker = try s.startWorker()
            let task = try await s.publishedTask()
            try await s.harness.waitForState(task["work"], ["enqueued_for_orchestration"])
            #expect(try await s.harness.result(task["work"]).success)

            let published = try #require(try await s.takeResult(for: task["work"]))
            #expect(published.properties.deliveryMode == 2 && published.properties.contentType == "application/json")
            let message = try JSONDecoder().decode(StepMessage.self, from: Data(published.body.readableBytesView))
            #expect(message.stepUUID == task["work"] && message.taskUUID == task.taskUUID)
            // The transport is the broker's only: nothing went through PGMQ.
            let pgmq: Int = try await s.harness.admin.query(
                "SELECT (SELECT count(*) FROM pgmq.q_orchestration_step_results) + (SELECT count(*) FROM pgmq.a_orchestration_step_results) AS n"
            )[0].decode("n")
            #expect(pgmq == 0)
            #expect(try Self.broker(worker).publishCounts.published == 1)
            // The durable domain event went to `<ns>_domain_events` on the broker, after the result.
            let events = QueueNames.domainEvents(namespace: s.harness.namespace)
            var event: AMQPGetResult?
            _ = try await eventually(within: .seconds(10)) {
                event = try await s.channel.get(queue: events)
                return event != nil
            }
            let delivered = try #require(event).delivery
            try await s.channel.ack(deliveryTag: delivered.deliveryTag)
            #expect(String(buffer: delivered.body).contains("rmq.done") && delivered.properties.deliveryMode == 2)
            // Acked: the worker's queue is empty, also once its connection is gone.
            try await worker.stop()
            #expect(try await s.queueDepth() == 0)
            // The queue the worker declared is accepted by a client declaring it upstream's way.
            #expect(try await Self.declareWithPika(s.queue).contains("declared"))
        }
    }

    @Test func theDeliveryIsAckedOnlyAfterTheClaimCommits() async throws {
        try await Self.scenario { s in
            let runs = InvocationCounter()
            let worker = try s.startWorker(work: { context in
                runs.record(context.stepUUID)
                return .success(["done": true])
            }) {
                $0.common.database.lockTimeoutMs = 60_000
                $0.worker.eventSystems.worker.timing.claimTimeoutSeconds = 60
            }
            let task = try await s.enqueuedTask()
            // The claim blocks on the held step, uncommitted.
            let holder = try await s.holdClaim(of: task["work"])
            try await s.publish(task, "work")
            try await s.waitForBlockedClaim()
            // Not acked while the claim waits: with the worker's connection closed, the delivery
            // returns to the queue and comes to the worker again on its next connection (left
            // for later while the first claim is in flight: the step is busy).
            let broker = try Self.broker(worker)
            #expect(try await BrokerEnvironment.forceClose(connectionsNamed: Self.connectionName(worker)) == 1)
            try await waitUntil(timeout: .seconds(15)) { broker.connection.generation >= 2 && broker.isConnected }
            try await Self.release(holder)
            try await s.harness.waitForState(task["work"], ["enqueued_for_orchestration"])
            // Claimed once; the redelivered copy found the step moved on (stale) and was acked.
            try await waitUntil(timeout: .seconds(15)) { worker.daemon.statistics.snapshot.staleMessages == 1 }
            #expect(runs.count(task["work"]) == 1)
            #expect(try await s.claims(task["work"]) == 1)
            _ = try await s.takeResult(for: task["work"])
            try await worker.stop()
            #expect(try await s.queueDepth() == 0)
        }
    }

    @Test func aClaimThatFailsTransientlyIsRequeuedAndClaimedLater() async throws {
        try await Self.scenario { s in
            // Claims give up on a held lock after 100 ms (55P03): a transient failure.
            let worker = try s.startWorker(configured: { $0.common.database.lockTimeoutMs = 100 })
            let task = try await s.enqueuedTask()
            let holder = try await s.holdClaim(of: task["work"])
            try await s.publish(task, "work")
            let failed = {
                worker.daemon.statistics.counters.current.total(
                    StepMetrics.Name.failures, where: "error_type", is: StepMetrics.FailureType.databaseError.rawValue)
            }
            // Failed, nacked with requeue after a backoff, redelivered, failed again: not lost.
            try await waitUntil(timeout: .seconds(15)) { failed() >= 2 }
            try await Self.release(holder)
            try await s.harness.waitForState(task["work"], ["enqueued_for_orchestration"])
            #expect(try await s.claims(task["work"]) == 1)
            _ = try await s.takeResult(for: task["work"])
            try await worker.stop()
            #expect(try await s.queueDepth() == 0)
        }
    }

    @Test func poisonDeliveriesAreAckedAndCounted() async throws {
        try await Self.scenario { s in
            let worker = try s.startWorker()
            try await s.publish("not json {")
            try await s.publish(StepMessage(taskUUID: UUID(), stepUUID: UUID(), correlationID: UUID()).jsonString())
            // Over the delivery limit: dropped unread and settled as poison (it used to end the
            // worker's connection, and the broker redelivered it to every reconnect, forever).
            try await s.publish(String(repeating: "x", count: Int(RabbitMQMessaging.maximumDeliveryBytes) + 1))
            // Messages of real steps nested past `UntrustedJSON.maximumDepth` by a field no reader
            // looks at (issue #26: 365–510 levels overflowed the decoder's stack): refused before
            // decoding, settled as poison, the step not run; the worker stays up. Without the limit,
            // the 129-deep one would decode and its step run. At the limit (128) the step runs.
            func padded(_ task: PipelineHarness.SeededTask, depth: Int) -> String {
                let message = StepMessage(taskUUID: task.taskUUID, stepUUID: task["work"], correlationID: task.correlationID)
                let deep = String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1)
                return String(message.jsonString().dropLast()) + #","padding":"# + deep + "}"
            }
            var refused: [PipelineHarness.SeededTask] = []
            for depth in [129, 450, 5_000] {
                let task = try await s.enqueuedTask()
                try await s.publish(padded(task, depth: depth))
                refused.append(task)
            }
            let atTheLimit = try await s.enqueuedTask()
            try await s.publish(padded(atTheLimit, depth: UntrustedJSON.maximumDepth))
            try await s.harness.waitForState(atTheLimit["work"], ["enqueued_for_orchestration"])
            try await waitUntil(timeout: .seconds(15)) { worker.daemon.statistics.snapshot.poisonMessages == 6 }
            for task in refused { #expect(try await s.claims(task["work"]) == 0) }
            try await worker.stop()
            // Acked, not merely held: nothing returns to the queue when the worker's connection closes.
            #expect(try await s.queueDepth() == 0)
            #expect(try await s.queueDepth("\(s.queue)_dlq") == 0)
        }
    }

    @Test func aPublishFailingAfterTheCommitIsRetriedUntilConfirmed() async throws {
        try await Self.scenario { s in
            let held = HeldHandler()
            // The worker reaches the broker through a proxy the test can cut, so that it stays
            // disconnected for as long as the test needs (a reconnect is otherwise quicker than a
            // loaded host runs the handler, and the publish would find the broker back).
            let proxy = try AnswerLosingProxy(databaseURL: try #require(BrokerEnvironment.url))
            defer { proxy.close() }
            let worker = try s.startWorker(work: held.work) { $0.common.queues.rabbitmq.url = proxy.url }
            let task = try await s.publishedTask()
            try await held.waitUntilEntered()
            // The broker becomes unreachable while the handler runs: the result is committed while
            // the worker is disconnected, and its publish must wait and retry until it can reconnect.
            let broker = try Self.broker(worker)
            proxy.refuseConnections()
            try await waitUntil(timeout: .seconds(20)) { !broker.isConnected }
            held.release()
            try await s.harness.waitForState(task["work"], ["enqueued_for_orchestration"])
            try await waitUntil(timeout: .seconds(20)) { broker.publishCounts.retries >= 1 }
            #expect(broker.publishCounts.published == 0)
            proxy.acceptConnections()
            // The next reconnect attempt comes within the worker's reconnect backoff (at most 10 s).
            try await waitUntil(timeout: .seconds(60)) { broker.publishCounts.published == 1 }
            #expect(try await s.takeResult(for: task["work"]) != nil)
            #expect(broker.publishCounts.retries >= 1 && broker.publishCounts.published == 1)
            // One result row: the retry was of the publish only.
            let stored = try await s.harness.transitions(task["work"]).filter { $0.to == "enqueued_for_orchestration" }
            #expect(stored.count == 1)
            try await worker.stop()
        }
    }

    @Test func resultsADeadWorkerNeverPublishedArePublishedAtStart() async throws {
        try await Self.scenario { s in
            // A step a previous worker stored its result for, then died before publishing it.
            let step = try await s.enqueuedTask()["work"]
            try await s.harness.transition(step, from: "enqueued", to: "in_progress", event: #"{"type":"Start"}"#)
            let metadata = #"{"event":"{}","worker_uuid":"\#(UUID().uuidString.lowercased())"}"#
            try await SchemaTests.transition(
                s.harness.admin, step: step, from: "in_progress", to: "enqueued_for_orchestration", metadata: metadata)
            let worker = try s.startWorker()
            #expect(try await s.takeResult(for: step) != nil)
            try await worker.stop()
        }
    }

    /// A crash-looping worker does not re-publish the same results at every start: the first start
    /// re-publishes the result (confirmed) and marks its transition `republished_at`; the next starts
    /// find nothing to re-publish.
    @Test func aResultIsRePublishedByOneStartNotByEveryStartOfACrashLoopingWorker() async throws {
        try await Self.scenario { s in
            let harness = s.harness
            let step = try await s.enqueuedTask()["work"]
            try await harness.transition(step, from: "enqueued", to: "in_progress", event: #"{"type":"Start"}"#)
            let metadata = #"{"event":"{}","worker_uuid":"\#(UUID().uuidString.lowercased())"}"#
            try await SchemaTests.transition(
                harness.admin, step: step, from: "in_progress", to: "enqueued_for_orchestration", metadata: metadata)
            let settings = try Self.onBroker(harness.configuration()).common.queues.rabbitmq
            let pool = s.db.pool(maxConnections: 2)
            for start in 1...3 {
                // Each start of the worker: a new broker connection and its start-up re-publish.
                let messaging = RabbitMQMessaging(
                    settings: settings, namespaces: [harness.namespace],
                    connectionName: BrokerEnvironment.uniqueName("rmq-crash-loop"))
                let running = Task { try await messaging.run() }
                let republished = await messaging.republishUnannounced(pool: pool)
                running.cancel()
                _ = try? await running.value
                #expect(republished == (start == 1 ? 1 : 0), "start \(start) re-published \(republished)")
            }
            #expect(try await s.takeResult(for: step) != nil)
            let marked: Bool = try await harness.admin.query(
                """
                SELECT metadata ? 'republished_at' AND metadata ? 'worker_uuid' AS marked
                  FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1 AND most_recent
                """, [step])[0].decode("marked")
            #expect(marked)
            await pool.close()
        }
    }

    @Test func crashRecoveryPublishesTheWorkerLostResultToTheBroker() async throws {
        try await Self.scenario { s in
            // A step claimed by a worker that is gone (no liveness lease for it).
            let step = try await s.enqueuedTask()["work"]
            let metadata = #"{"event":"{}","worker_uuid":"\#(UUID().uuidString.lowercased())"}"#
            try await SchemaTests.transition(s.harness.admin, step: step, from: "enqueued", to: "in_progress", metadata: metadata)
            let worker = try s.startWorker(configured: {
                $0.worker.crashRecovery.scanIntervalMs = 100
                $0.worker.crashRecovery.gracePeriodMs = 1000
            })
            try await s.harness.waitForState(step, ["enqueued_as_error_for_orchestration"])
            #expect(try await s.harness.result(step).error?.errorType == "worker_lost")
            #expect(try await s.takeResult(for: step) != nil)
            let pgmq: Int = try await s.harness.admin.query("SELECT count(*) AS n FROM pgmq.q_orchestration_step_results")[0].decode("n")
            #expect(pgmq == 0)
            try await worker.stop()
        }
    }

    @Test func drainReturnsTheDeliveriesNotClaimedToTheQueueAndFinishesTheClaimedStep() async throws {
        try await Self.scenario { s in
            let held = HeldHandler()
            // One handler permit: with load shedding, one step is claimed and the others are left for later.
            let worker = try s.startWorker(work: held.work) { $0.worker.mpscChannels.handlerDispatch.maxConcurrentHandlers = 1 }
            let steps = ["work", "second", "third"]
            let task = try await s.publishedTask(steps)
            try await held.waitUntilEntered()
            let stopping = Task { try await worker.stop() }
            // While the claimed step still runs, the deliveries not claimed are back in the queue
            // (well before the handler gives up waiting by itself after 10 s).
            func count(in state: String) async throws -> Int {
                var count = 0
                for step in steps where try await s.harness.state(task[step]) == state { count += 1 }
                return count
            }
            try await waitUntil(timeout: .seconds(5)) { try await s.queueDepth() == 2 }
            #expect(try await count(in: "enqueued") == 2)
            held.release()
            try await stopping.value
            // Drained: the running step's result is stored and published; nothing was lost or acked unclaimed.
            #expect(try await count(in: "enqueued_for_orchestration") == 1)
            #expect(try await s.queueDepth() == 2)
        }
    }

    @Test func healthAndMetricsReportTheBrokerAndItsQueueDepths() async throws {
        try await Self.scenario { s in
            // A message left in the PGMQ queue of the same name: with RabbitMQ carrying the messages,
            // the depth reported is the broker's (0), not PGMQ's (1).
            _ = try await PGMQ.sendWithNotify(s.harness.admin, queue: s.queue, message: PostgresJSON(raw: #"{"unused":true}"#))
            let worker = try s.startWorker()
            let broker = try Self.broker(worker)
            try await waitUntil(timeout: .seconds(15)) { broker.isConnected && worker.daemon.runtime.eventSystem.status.running }
            let status = worker.daemon.runtime.eventSystem.status
            #expect(status.brokerState == .connected && status.isReceiving && status.listenerState == nil && !status.pollingActive)
            let health = WorkerHealthService(runtime: worker.daemon.runtime)
            #expect(health.checkEventSystem().message?.contains("RabbitMQ connected") == true)
            let depth = await health.checkQueueProcessing()
            #expect(depth.message == "Own queues total depth: 0 (\(s.queue)=0)", "\(depth)")
            let scrape = await WorkerScrape.collect(worker.daemon.runtime)
            #expect(scrape.queuesRead && scrape.queues.map(\.queue) == [s.queue] && scrape.queues.map(\.depth) == [0])
            try await worker.stop()
        }
    }
}
