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
}
