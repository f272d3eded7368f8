import Foundation
import Instrumentation
import Logging
import Synchronization
import Tracing

/// The process's tracing: installed once (`InstrumentationSystem.bootstrap` may run only once per
/// process), from ``TelemetrySettings``, and only when export is on.
///
/// - Off (`TELEMETRY_ENABLED` unset or false): nothing is installed. Spans are swift-distributed-tracing's
///   no-op ones: no ids are made, no `traceparent` goes into messages or outgoing HTTP requests, the FFI
///   event's `trace_id`/`span_id` stay null. Off means off.
/// - On: ``TaskerTracer`` with a ``SpanExporter``, which must run in the process's service group.
/// - A program that installed an instrument of its own before (a handler author's `main` with another
///   tracer) keeps it: this one is not installed, and a warning says so, instead of the precondition
///   failure a second `InstrumentationSystem.bootstrap` would be.
public enum Telemetry {
    private static let installed = Mutex<SpanExporter?>(nil)
    private static let bootstrapped = Mutex(false)

    /// Installs the tracer for `settings` (the first call in a process decides; later calls return what
    /// it installed). Returns the exporter to run, nil when export is off or another instrument was
    /// already installed.
    @discardableResult
    public static func bootstrap(_ settings: TelemetrySettings, logger: Logger = Logger(label: "tasker.telemetry")) -> SpanExporter? {
        bootstrapped.withLock { done in
            if done { return installed.withLock { $0 } }
            done = true
            guard settings.enabled else { return nil }
            guard InstrumentationSystem.instrument is NoOpInstrument else {
                logger.warning(
                    "TELEMETRY_ENABLED is set, but the program installed an instrument of its own: it is kept, and no span is exported by this one"
                )
                return nil
            }
            let exporter = SpanExporter(settings: settings)
            installed.withLock { $0 = exporter }
            InstrumentationSystem.bootstrap(TaskerTracer(sampler: settings.sampler, sink: exporter, limits: settings.limits))
            return exporter
        }
    }

    /// The exporter installed by ``bootstrap(_:)``, if export is on.
    public static var exporter: SpanExporter? { installed.withLock { $0 } }

    /// The trace position of the current task (`ServiceContext.current`), if any.
    public static var current: TraceParent? { ServiceContext.current?.traceParent }
}
