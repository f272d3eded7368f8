import Foundation
import ServiceLifecycle
import TaskerTelemetry

/// The worker's tracing, from the environment as upstream's processes read it (`TELEMETRY_ENABLED`,
/// `OTEL_*`: ``TelemetrySettings``; service name `tasker-worker` by default).
package enum WorkerTelemetry {
    /// Installs the process's tracer (once per process: later calls get the first call's exporter) and
    /// returns the services to run beside the worker: the span exporter when export is on (it must
    /// shut down after the worker, so that the last spans are sent). Throws when a variable is invalid.
    package static func bootstrap(
        environment: [String: String] = ProcessInfo.processInfo.environment, serviceName: String = "tasker-worker"
    ) throws(TelemetrySettingsError) -> [any Service] {
        let settings = try TelemetrySettings(environment: environment, defaultServiceName: serviceName)
        return Telemetry.bootstrap(settings).map { [$0] } ?? []
    }
}
