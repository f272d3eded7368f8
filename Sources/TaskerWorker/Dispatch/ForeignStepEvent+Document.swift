import Foundation
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore
import TaskerTelemetry
import Tracing

extension ForeignStepEvent {
    /// Why a claimed step could not be turned into an event (its rows did not read as JSON).
    package struct DocumentError: Error, CustomStringConvertible {
        package let description: String
    }

    /// The event of a claimed step, as upstream's `FfiStepEvent`:
    /// `{"event_id","task_uuid","step_uuid","correlation_id","trace_id","span_id",
    /// "task_correlation_id","parent_correlation_id","task_sequence_step"}` where
    /// `task_sequence_step` is upstream's `TaskSequenceStep`:
    /// `{"task":{"task":{<tasks columns>},"task_name","task_version","namespace_name"},
    /// "workflow_step":{<workflow_steps columns>,"name","template_step_name"},
    /// "dependency_results":{"<step name>":<StepExecutionResult>},"step_definition":{<template step>}}`.
    /// The step is as claimed (`attempts` counted, `in_process`), with `checkpoint` (the stored
    /// one, or the one just yielded). `readyAt`: where the poll wake-up latency counts from.
    /// `trace`: the handler span the foreign handler runs under (by default the current task's, when it
    /// is sampled), whose ids fill `trace_id` (32 hex digits) and `span_id` (16), so that a foreign
    /// handler's own spans (the OpenTelemetry SDK of its language) continue the step's trace; null
    /// without one, or when the step's trace is not sampled (the event has no flags field, and the
    /// SDKs' `traceparent` marks the ids sampled).
    package static func make(
        _ step: ClaimedStep, definition: StepDefinition, checkpoint: JSONValue?, id: UUID = .v7(),
        readyAt: ContinuousClock.Instant = .now,
        trace: TraceParent? = ServiceContext.current?.traceParent.flatMap { $0.sampled ? $0 : nil }
    ) throws(DocumentError)
        -> ForeignStepEvent
    {
        let hydrated = step.hydrated
        var task = try rowObject(hydrated.taskRow, "task")
        task["context"] = hydrated.taskContext
        var workflowStep = try rowObject(hydrated.stepRow, "workflow step")
        workflowStep["inputs"] = hydrated.inputs
        workflowStep["checkpoint"] = checkpoint ?? .null
        workflowStep["name"] = .string(hydrated.stepName)
        workflowStep["template_step_name"] = .string(hydrated.templateStepName)
        workflowStep["attempts"] = .int(Int64(step.attempts))
        workflowStep["in_process"] = .bool(true)
        // The row was read just before the claim set it: the claim's time, naive UTC as the column serializes.
        let claimedAt = Date().addingTimeInterval(-Double(step.claimedAt.duration(to: .now).inNanoseconds) / 1e9)
        workflowStep["last_attempted_at"] = .string(String(ResultTimestamp.string(claimedAt).dropLast()))
        workflowStep["max_attempts"] = .int(Int64(hydrated.maxAttempts))
        let stepDefinition: JSONValue
        do {
            stepDefinition = try JSONValue(encoding: definition)
        } catch {
            throw DocumentError(description: "the step definition does not encode as JSON: \(error)")
        }
        let correlation = JSONValue.string(hydrated.correlationID.uuidString.lowercased())
        let document: JSONValue = .object([
            "event_id": .string(id.uuidString.lowercased()),
            "task_uuid": .string(hydrated.taskUUID.uuidString.lowercased()),
            "step_uuid": .string(hydrated.stepUUID.uuidString.lowercased()),
            "correlation_id": correlation,
            "task_correlation_id": correlation,
            "parent_correlation_id": task["parent_correlation_id"] ?? .null,
            "trace_id": trace.map { .string($0.traceID.hex) } ?? .null,
            "span_id": trace.map { .string($0.spanID.hex) } ?? .null,
            "task_sequence_step": .object([
                "task": .object([
                    "task": .object(task), "task_name": .string(hydrated.taskName),
                    "task_version": .string(hydrated.taskVersion), "namespace_name": .string(hydrated.namespace),
                ]),
                "workflow_step": .object(workflowStep),
                "dependency_results": .object(hydrated.dependencyResults),
                "step_definition": stepDefinition,
            ]),
        ])
        let json: String
        do {
            json = try document.jsonString()
        } catch {
            throw DocumentError(description: "the step event does not encode as JSON: \(error)")
        }
        // Values come in at most `maximumValueDepth` deep, which the event's envelope keeps readable;
        // data stored before that limit (up to `maximumDepth`) could make an event no reader accepts.
        var text = json
        let depth = text.withUTF8 {
            UntrustedJSON.depth(of: UnsafeRawBufferPointer($0), stoppingAfter: UntrustedJSON.maximumDepth).depth
        }
        if depth > UntrustedJSON.maximumDepth {
            throw DocumentError(
                description: "the step event would be nested more than \(UntrustedJSON.maximumDepth) levels deep: the "
                    + "step's stored context, inputs, rows or dependency results are nested too deep")
        }
        return ForeignStepEvent(id: id, stepUUID: hydrated.stepUUID, json: json, readyAt: readyAt)
    }

    /// A stored row (`row_to_json` text, read back: untrusted) as a JSON object, or why it is not one.
    static func rowObject(_ text: String, _ what: String) throws(DocumentError) -> [String: JSONValue] {
        guard case .object(let members)? = try? UntrustedJSON.decode(JSONValue.self, from: text, what: "the \(what) row") else {
            throw DocumentError(description: "the \(what) row is not a JSON object")
        }
        return members
    }
}
