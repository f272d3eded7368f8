import TaskerModel

/// The building blocks of the OpenAPI 3.1 documents both REST servers serve at `/api-docs/openapi.json`
/// (the worker's `WorkerOpenAPISchemas`, the orchestration's `OrchestrationOpenAPISchemas`): JSON
/// Schema types as JSON values, `$ref`s into `components.schemas`, objects whose properties are
/// required unless named optional, and the one `ApiError` body (``APIErrorResponse``) both servers send.
package enum OpenAPISchema {
    package static let string: JSONValue = ["type": "string"]
    package static let uuid: JSONValue = ["type": "string", "format": "uuid"]
    package static let dateTime: JSONValue = ["type": "string", "format": "date-time"]
    package static let boolean: JSONValue = ["type": "boolean"]
    package static let double: JSONValue = ["type": "number", "format": "double"]
    package static let int64: JSONValue = ["type": "integer", "format": "int64"]
    package static let int32: JSONValue = ["type": "integer", "format": "int32"]
    package static let uint64: JSONValue = ["type": "integer", "format": "int64", "minimum": 0]
    package static let uint32: JSONValue = ["type": "integer", "format": "int32", "minimum": 0]
    package static let strings: JSONValue = ["type": "array", "items": string]
    package static let nullableString: JSONValue = ["type": ["string", "null"]]
    package static let nullableUUID: JSONValue = ["type": ["string", "null"], "format": "uuid"]
    package static let nullableDateTime: JSONValue = ["type": ["string", "null"], "format": "date-time"]
    package static let nullableBoolean: JSONValue = ["type": ["boolean", "null"]]
    package static let nullableInt32: JSONValue = ["type": ["integer", "null"], "format": "int32"]
    package static let nullableInt64: JSONValue = ["type": ["integer", "null"], "format": "int64"]
    package static let nullableUInt64: JSONValue = ["type": ["integer", "null"], "format": "int64", "minimum": 0]
    package static let nullableDouble: JSONValue = ["type": ["number", "null"], "format": "double"]
    /// Any JSON value (an empty schema).
    package static let anyValue: JSONValue = [:]

    /// `{"$ref": "#/components/schemas/<name>"}`.
    package static func ref(_ name: String) -> JSONValue { ["$ref": .string("#/components/schemas/\(name)")] }

    /// The schema `name`, or null.
    package static func nullable(_ name: String) -> JSONValue { ["oneOf": [ref(name), ["type": "null"]]] }

    /// An array of `items`.
    package static func array(_ items: JSONValue) -> JSONValue { ["type": "array", "items": items] }

    /// A string of one of `values`.
    package static func enumeration(_ values: [String], description: String? = nil) -> JSONValue {
        var members: [String: JSONValue] = ["type": "string", "enum": .array(values.map(JSONValue.string))]
        if let description { members["description"] = .string(description) }
        return .object(members)
    }

    /// An object schema; every property is required unless listed in `optional`.
    package static func object(
        _ properties: KeyValuePairs<String, JSONValue>, optional: Set<String> = [],
        description: String? = nil
    ) -> JSONValue {
        var members: [String: JSONValue] = [
            "type": "object",
            "properties": .object(Dictionary(uniqueKeysWithValues: properties.map { ($0.key, $0.value) })),
            "required": .array(properties.map(\.key).filter { !optional.contains($0) }.map(JSONValue.string)),
        ]
        if let description { members["description"] = .string(description) }
        return .object(members)
    }

    /// `ApiError` and `ApiErrorDetail`: the `{"error":{"code","message"}}` body of every refusal.
    package static let apiError: [String: JSONValue] = [
        "ApiError": object(
            ["error": ref("ApiErrorDetail")],
            description: "Sent for unknown paths, bad parameters, timeouts, auth failures and internal errors."),
        "ApiErrorDetail": object(["code": string, "message": string]),
    ]
}
