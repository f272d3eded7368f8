import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Domain event payloads are validated against the declared JSON `schema`; invalid events are
/// skipped (logged and counted) and never fail the step.
@Suite("Domain event schemas", .timeLimit(.minutes(2)))
struct DomainEventSchemaTests {
    static let order: JSONValue = [
        "type": "object",
        "required": ["order_id", "total"],
        "properties": [
            "order_id": ["type": "string", "pattern": "^ord-[0-9]+$"],
            "total": ["type": "number", "minimum": 0],
            "items": ["type": "array", "items": ["type": "integer"], "minItems": 1, "uniqueItems": true],
            "status": ["enum": ["new", "paid"]],
        ],
        "additionalProperties": false,
    ]

    @Test func aPayloadThatSatisfiesTheSchemaHasNoViolations() {
        let schema = JSONSchema(Self.order)
        #expect(schema.violations(of: ["order_id": "ord-12", "total": 9.5, "items": [1, 2], "status": "paid"]).isEmpty)
        #expect(schema.violations(of: ["order_id": "ord-1", "total": 0]).isEmpty)
        #expect(JSONSchema(true).validates(["anything": 1]))
        #expect(JSONSchema(.emptyObject).validates(.null))
    }

    @Test func everyViolationNamesWhereAndWhat() {
        let violations = JSONSchema(Self.order).violations(of: [
            "order_id": "x-12", "total": -1, "items": [1, 1.5, 1], "status": "lost", "extra": true,
        ])
        let text = violations.map(\.description)
        #expect(text.contains("/order_id: string does not match pattern `^ord-[0-9]+$`"))
        #expect(text.contains("/total: -1 is below the minimum 0"))
        #expect(text.contains("/items/1: expected type integer, found number"))
        #expect(text.contains("/items: items 0 and 2 are equal (uniqueItems)"))
        #expect(text.contains("/status: value is not one of the allowed values (enum)"))
        #expect(text.contains("/extra: property `extra` is not allowed (additionalProperties)"))
        #expect(violations.count == 6, "\(text)")

        let missing = JSONSchema(Self.order).violations(of: ["total": 1])
        #expect(missing.map(\.description) == ["/: missing required property `order_id`"])
        #expect(JSONSchema(Self.order).violations(of: "text").map(\.description) == ["/: expected type object, found string"])
        #expect(!JSONSchema(false).validates(.null))
    }

    @Test func combinatorsAndNumbers() {
        let schema = JSONSchema([
            "oneOf": [["type": "integer", "multipleOf": 5], ["type": "string", "maxLength": 3]],
            "not": ["const": 10],
        ])
        #expect(schema.validates(15))
        #expect(schema.validates(15.0))  // a whole double is an integer
        #expect(schema.validates("abc"))
        #expect(!schema.validates(10))  // `not`
        #expect(!schema.validates(7))  // neither branch
        #expect(!schema.validates("abcd"))
        let conditional = JSONSchema([
            "if": ["properties": ["kind": ["const": "refund"]]],
            "then": ["required": ["reason"]],
            "else": ["required": ["amount"]],
        ])
        #expect(conditional.validates(["kind": "refund", "reason": "broken"]))
        #expect(!conditional.validates(["kind": "refund"]))
        #expect(conditional.validates(["kind": "sale", "amount": 3]))
        #expect(JSONSchema(["exclusiveMaximum": 3]).violations(of: 3).count == 1)
        #expect(JSONSchema(["anyOf": [["type": "null"], ["minLength": 2]]]).validates(.null))
    }

    @Test func aTemplateWhoseSchemaIsNotASchemaIsRejectedWithItsStep() throws {
        let yaml = """
            name: bad_schema
            namespace_name: schemas
            version: 1.0.0
            steps:
              - name: announce
                handler: { callable: tasker.noop }
                publishes_events:
                  - name: orders.done
                    description: x
                    schema: "not a schema"
            """
        let template = try TemplateYAML.decodeTemplate(yaml)
        let findings = TaskTemplateValidator.validate(template)
        #expect(
            findings == [
                .init(
                    step: "announce",
                    message:
                        "event \"orders.done\": schema must be a JSON Schema object, a boolean or null")
            ])

        // A broken regular expression is found at load, not by dropping every event at run time.
        let badPattern = try TemplateYAML.decodeTemplate(
            yaml.replacingOccurrences(
                of: "schema: \"not a schema\"",
                with: "schema: { properties: { id: { type: string, pattern: \"([a-z\" } }, patternProperties: { \"^x(\": true } }"))
        #expect(
            TaskTemplateValidator.validate(badPattern).map(\.message) == [
                "event \"orders.done\": schema /patternProperties/^x(: not a valid regular expression",
                "event \"orders.done\": schema /properties/id/pattern: not a valid regular expression",
            ])
    }

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
