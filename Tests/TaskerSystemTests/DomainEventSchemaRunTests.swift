import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Domain event payloads are validated against the declared JSON `schema` in a running worker:
/// invalid events are skipped (logged and counted) and never fail the step (the validator itself:
/// `DomainEventSchemaTests` in TaskerWorkerTests).
@Suite("Domain event schemas in a running worker", .timeLimit(.minutes(3)))
struct DomainEventSchemaRunTests {
    static let yaml = """
        name: schemas
        namespace_name: schemas
        version: 1.0.0
        steps:
          - name: good
            handler: { callable: test.order }
            publishes_events: &events
              - name: orders.placed
                description: an order was placed
                condition: success
                delivery_mode: durable
                schema: { type: object, required: [order_id, total], properties: { order_id: { type: string }, total: { type: number, minimum: 0 } } }
              - name: orders.audited
                description: no schema
                condition: always
                delivery_mode: durable
                schema: null
          - name: bad
            handler: { callable: test.order }
            publishes_events: *events
        """

    /// The `good` step's payload satisfies the schema; `bad`'s does not: its `orders.placed` is
    /// skipped and counted, its schema-less `orders.audited` still goes out, and the step succeeds.
    @Test(arguments: [WorkerConfiguration.DeploymentMode.hybrid, .pollingOnly])
    func invalidPayloadsSkipOnlyTheirEvent(mode: WorkerConfiguration.DeploymentMode) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.order") { context in
                context.stepName == "good"
                    ? .success(["order_id": "ord-1", "total": 12.5])
                    : .success(["order_id": 7])
            }
            let worker = harness.startWorker(handlers, configuration: harness.configuration(mode: mode))
            let task = try await harness.createTask(steps: ["good", "bad"])
            try await harness.enqueue(task, "good")
            try await harness.enqueue(task, "bad")
            try await harness.waitForState(task["good"], ["enqueued_for_orchestration"])
            try await harness.waitForState(task["bad"], ["enqueued_for_orchestration"])
            let queue = QueueNames.domainEvents(namespace: harness.namespace)
            try await waitUntil(timeout: .seconds(10)) { try await harness.eventMessages(queue).count >= 3 }
            try await worker.stop()

            let events = try await harness.eventMessages(queue)
            let published = events.map {
                ($0["event_name"]?.stringValue ?? "", $0["metadata"]?["step_name"]?.stringValue ?? "")
            }
            #expect(published.count == 3, "\(published)")
            #expect(published.contains { $0 == ("orders.placed", "good") })
            #expect(published.contains { $0 == ("orders.audited", "good") })
            #expect(published.contains { $0 == ("orders.audited", "bad") })
            #expect(!published.contains { $0 == ("orders.placed", "bad") })
            let statistics = worker.daemon.statistics.snapshot
            #expect(statistics.domainEventsInvalid == 1)
            #expect(statistics.domainEventsPublished == 3)
            #expect(statistics.domainEventsFailed == 0)
            #expect(try await harness.result(task["bad"]).success)
        }
    }
}
