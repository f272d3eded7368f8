import Foundation
import Instrumentation
import Synchronization
import Tracing

/// The process's tracing: installed once (`InstrumentationSystem.bootstrap` may run only once per
/// process), from ``TelemetrySettings``.
///
/// - Off (`TELEMETRY_ENABLED` unset or false): the tracer still starts spans, so trace ids are made
///   and carried (`traceparent` in step messages, `trace_id`/`span_id` in FFI step events and log
///   lines), but nothing is recorded or sent.
/// - On: a ``SpanExporter`` sends the sampled spans; it must run in the process's service group
///   (``exporter``).
public enum Telemetry {
    private static let installed = Mutex<SpanExporter?>(nil)
    private static let bootstrapped = Mutex(false)

    /// Installs the tracer for `settings` (the first call in a process wins; later calls return what
    /// the first installed). Returns the exporter to run, nil when export is off.
    @discardableResult
    public static func bootstrap(_ settings: TelemetrySettings) -> SpanExporter? {
        bootstrapped.withLock { done in
            if done { return installed.withLock { $0 } }
            done = true
            let exporter = settings.enabled ? SpanExporter(settings: settings) : nil
            installed.withLock { $0 = exporter }
            InstrumentationSystem.bootstrap(TaskerTracer(sampler: settings.sampler, sink: exporter))
            return exporter
        }
    }

    /// The exporter installed by ``bootstrap(_:)``, if export is on.
    public static var exporter: SpanExporter? { installed.withLock { $0 } }

    /// The trace position of the current task (`ServiceContext.current`), if any.
    public static var current: TraceParent? { ServiceContext.current?.traceParent }
}
