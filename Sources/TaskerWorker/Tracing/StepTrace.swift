import Foundation
import TaskerHandlerSDK
import TaskerModel
import TaskerTelemetry
import Tracing

/// A claimed step's spans (issue #30): `tasker.step` (consumer) from the claim to the stored result, a
/// child of the step message's `traceparent` (the orchestration's enqueue span) or the root of a trace
/// of its own; under it `tasker.step.claim`, `tasker.step.handler` and `tasker.step.result`.
///
/// It travels with the step (``ClaimedStep/trace``) through the dispatch and completion channels,
/// where no task-local context survives; each stage starts its child from ``context``. The result
/// message to orchestration carries ``traceParent`` (the step span), so the orchestration's result
/// processing joins the same trace. Spans are made whether or not export is on (ids for the FFI
/// event and the log lines); only sampled ones are recorded.
package struct StepTrace: Sendable {
    let step: any Span

    /// The step span's context: the parent of its phases, and of a foreign handler's spans.
    package var context: ServiceContext { step.context }

    /// The step span's position (`traceparent` of the result message; `trace_id`/`span_id` of the FFI event).
    package var traceParent: TraceParent? { step.context.traceParent }

    /// Starts `tasker.step` at `claimStart` under `message`'s `traceparent`, and records the claim
    /// (`tasker.step.claim`, from `claimStart` until now).
    static func claimed(_ message: StepMessage, _ hydrated: HydratedStep, since claimStart: ContinuousClock.Instant) -> StepTrace {
        var parent = ServiceContext.topLevel
        if let header = message.traceparent, let traceParent = TraceParent(header: header) {
            parent.traceParent = traceParent
        }
        let started = WallInstant.ago(claimStart.duration(to: .now))
        let step = startSpan("tasker.step", context: parent, ofKind: .consumer, at: started)
        step.updateAttributes { attributes in
            attributes["tasker.task_uuid"] = hydrated.taskUUID.uuidString.lowercased()
            attributes["tasker.step_uuid"] = hydrated.stepUUID.uuidString.lowercased()
            attributes["tasker.correlation_id"] = hydrated.correlationID.uuidString.lowercased()
            attributes["tasker.namespace"] = hydrated.namespace
            attributes["tasker.task_name"] = hydrated.taskName
            attributes["tasker.step_name"] = hydrated.stepName
            attributes["tasker.attempt"] = hydrated.attempts + 1
        }
        let claim = startSpan("tasker.step.claim", context: step.context, ofKind: .internal, at: started)
        claim.end()
        return StepTrace(step: step)
    }

    /// A phase of the step (`tasker.step.handler`, `tasker.step.result`), started at `start` (now by default).
    func phase(_ name: String, since start: ContinuousClock.Instant = .now, attributes: SpanAttributes = [:]) -> any Span {
        let span = startSpan(name, context: step.context, ofKind: .internal, at: WallInstant.ago(start.duration(to: .now)))
        if attributes.count > 0 { span.attributes = attributes }
        return span
    }

    /// Ends the step span as not stored (`reason`) unless it ended already (then nothing changes: a span
    /// ends once). For the paths where a step leaves the worker without a stored result.
    func abandon(_ reason: String) {
        step.setStatus(SpanStatus(code: .error, message: reason))
        step.end()
    }

    /// Ends the step span with `result`'s outcome.
    func end(_ result: StepExecutionResult) {
        if !result.success {
            step.setStatus(SpanStatus(code: .error, message: result.error?.message))
        }
        step.end()
    }
}

/// A wall-clock instant for spans that began before they could be started (the claim's start).
struct WallInstant: TracerInstant {
    let nanosecondsSinceEpoch: UInt64

    static func ago(_ elapsed: Duration) -> WallInstant {
        let now = DefaultTracerClock.now.nanosecondsSinceEpoch
        let (seconds, attoseconds) = elapsed.components
        let back = UInt64(max(0, seconds)) &* 1_000_000_000 &+ UInt64(max(0, attoseconds / 1_000_000_000))
        return WallInstant(nanosecondsSinceEpoch: back < now ? now - back : now)
    }

    static func < (lhs: WallInstant, rhs: WallInstant) -> Bool {
        lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch
    }
}
