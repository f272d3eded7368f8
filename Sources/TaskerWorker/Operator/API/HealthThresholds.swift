/// Every number the health checks judge by, in one place. The defaults are upstream's
/// (`crates/tasker-worker/src/worker/services/health/service.rs`) except where noted.
package struct HealthThresholds: Sendable, Equatable {
    /// Queue depth (messages in this worker's own `worker_<ns>_queue`s, summed) below which
    /// `queue_processing` is healthy. Upstream sums every queue in the database; we count only ours.
    var queueDepthHealthyBelow: Int = 10_000
    /// Queue depth below which `queue_processing` is degraded; at or above it, unhealthy.
    var queueDepthDegradedBelow: Int = 50_000
    /// Step failure rate (failed / executed) below which `step_processing` is healthy.
    var failureRateHealthyBelow: Double = 0.05
    /// Failure rate below which `step_processing` is degraded; at or above it, unhealthy.
    var failureRateDegradedBelow: Double = 0.15
    /// How long `SELECT 1` through the pool may take before `database` is unhealthy (ours: upstream
    /// waits for the pool's own acquire timeout, which keeps a probe hanging for seconds).
    var databaseTimeout: Duration = .seconds(2)
    /// How long reading the worker's status may take before the `command_processor` check counts it as not alive.
    var commandProcessorTimeout: Duration = .seconds(2)
    /// How long reading the queue metrics may take before `queue_processing` is unhealthy.
    var queueMetricsTimeout: Duration = .seconds(2)

    package init() {}

    /// Upstream's thresholds.
    package static let `default` = HealthThresholds()

    /// The verdict for a total queue depth.
    func queueDepthStatus(_ depth: Int) -> HealthStatus {
        depth < queueDepthHealthyBelow ? .healthy : depth < queueDepthDegradedBelow ? .degraded : .unhealthy
    }

    /// The verdict for a failure rate (0…1).
    func failureRateStatus(_ rate: Double) -> HealthStatus {
        rate < failureRateHealthyBelow ? .healthy : rate < failureRateDegradedBelow ? .degraded : .unhealthy
    }
}
