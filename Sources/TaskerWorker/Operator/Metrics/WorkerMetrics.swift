import Metrics
import Synchronization

/// The process-wide metrics backend: one `PrometheusMetricsFactory` that every component records
/// into and that `/metrics` renders.
///
/// `MetricsSystem.bootstrap` may run only once per process, but tests start many workers in one
/// process, so `bootstrap()` is idempotent: the first call installs the shared factory, later calls
/// return it. The worker's own instrumentation (`StepMetrics`) records into `shared` directly, so
/// it works even where nobody bootstrapped (libraries such as Hummingbird's `MetricsMiddleware`
/// need the bootstrap, because they use the global `MetricsSystem`).
package enum WorkerMetrics {
    /// The factory every worker component in this process records into.
    package static let shared = PrometheusMetricsFactory()

    private static let installed = Mutex(false)

    /// Installs `shared` as the global swift-metrics backend (once per process) and returns it.
    /// Safe to call any number of times and from any thread. If another backend was installed
    /// before (not by this function), it is left in place and `shared` still collects the
    /// worker's own metrics.
    @discardableResult
    package static func bootstrap() -> PrometheusMetricsFactory {
        installed.withLock { installed in
            guard !installed else { return }
            installed = true
            if MetricsSystem.factory is NOOPMetricsHandler {
                MetricsSystem.bootstrap(shared)
            }
        }
        return shared
    }

    /// Whether `bootstrap()` has run in this process.
    static var isBootstrapped: Bool { installed.withLock { $0 } }
}
