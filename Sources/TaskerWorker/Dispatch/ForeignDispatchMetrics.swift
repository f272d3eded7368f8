import Foundation
import TaskerHTTP
import TaskerHandlerSDK
import TaskerModel

/// The FFI dispatch channel's figures (`tasker_ffi_dispatch_metrics`, the `ffi_dispatch` object of
/// the embedded worker's metrics, and the `tasker_worker_ffi_dispatch_*` Prometheus families).
/// "Pending" is every event dispatched to the channel without an outcome yet (queued for a poller
/// or held by a foreign handler), as upstream's `FfiDispatchMetrics`.
package struct ForeignDispatchMetrics: Sendable, Equatable {
    var pendingCount: Int
    /// Pending events no poller has taken yet.
    var queuedCount: Int
    /// Pending events waiting for room in the buffer (`dispatch_buffer_size`).
    var blockedCount: Int
    var oldestPendingAgeMs: Int
    var newestPendingAgeMs: Int
    var oldestEventID: UUID?
    /// Pending events older than `starvation_warning_threshold_ms`.
    var starvingEventCount: Int
    package var polls: Int
    package var completions: Int
    var checkpoints: Int
    package var timeouts: Int
    /// Starvation warnings logged so far.
    var starvationWarnings: Int
    /// Pollers waiting for an event now.
    var waitingPollers: Int
    /// Claim → a waiting poller has the event, over the most recent wake-ups.
    var wakeup = LatencySamples.Summary()
    /// The hand-over alone (event given to a waiting poller thread → that thread runs), same wake-ups.
    var handoff = LatencySamples.Summary()

    var starvationDetected: Bool { starvingEventCount > 0 }

    /// The JSON object (upstream's keys first; the rest are ours).
    package var json: JSONValue {
        .object([
            "pending_count": .int(Int64(pendingCount)),
            "oldest_pending_age_ms": .int(Int64(oldestPendingAgeMs)),
            "newest_pending_age_ms": .int(Int64(newestPendingAgeMs)),
            "oldest_event_id": oldestEventID.map { .string($0.uuidString.lowercased()) } ?? .null,
            "starvation_detected": .bool(starvationDetected),
            "starving_event_count": .int(Int64(starvingEventCount)),
            "polls": .int(Int64(polls)),
            "completions": .int(Int64(completions)),
            "timeouts": .int(Int64(timeouts)),
            "checkpoints": .int(Int64(checkpoints)),
            "queued_count": .int(Int64(queuedCount)),
            "blocked_count": .int(Int64(blockedCount)),
            "starvation_warnings": .int(Int64(starvationWarnings)),
            "waiting_pollers": .int(Int64(waitingPollers)),
            "wakeup_after_claim_us": wakeup.json,
            "handoff_to_poller_us": handoff.json,
        ])
    }

    /// The Prometheus families (`/metrics`).
    package var families: [MetricFamily] {
        [
            .single(
                "tasker_worker_ffi_dispatch_pending", .gauge,
                help: "Step events in the FFI dispatch channel without an outcome yet", value: Double(pendingCount)),
            .single(
                "tasker_worker_ffi_dispatch_oldest_pending_age_seconds", .gauge,
                help: "Age of the oldest pending FFI step event in seconds", value: Double(oldestPendingAgeMs) / 1000),
            .single(
                "tasker_worker_ffi_dispatch_starving", .gauge,
                help: "Pending FFI step events older than the starvation threshold", value: Double(starvingEventCount)),
            .single(
                "tasker_worker_ffi_dispatch_polls_total", .counter, help: "Polls of the FFI dispatch channel",
                value: Double(polls)),
            .single(
                "tasker_worker_ffi_dispatch_completions_total", .counter,
                help: "FFI step events completed by a foreign handler", value: Double(completions)),
            .single(
                "tasker_worker_ffi_dispatch_timeouts_total", .counter,
                help: "FFI step events not completed within completion_timeout_ms", value: Double(timeouts)),
            .single(
                "tasker_worker_ffi_dispatch_starvation_warnings_total", .counter,
                help: "Starvation warnings logged for pending FFI step events", value: Double(starvationWarnings)),
        ]
    }

    /// `/metrics/worker` entries.
    package var workerMetrics: [String: WorkerMetricValue] {
        [
            "ffi_dispatch_pending_count": .init(Double(pendingCount), help: "Pending FFI step events"),
            "ffi_dispatch_oldest_pending_age_ms": .init(Double(oldestPendingAgeMs), help: "Oldest pending FFI step event age in ms"),
            "ffi_dispatch_starving_event_count": .init(
                Double(starvingEventCount), help: "Pending FFI step events past the starvation threshold"),
            "ffi_dispatch_polls": .init(Double(polls), "counter", help: "Polls of the FFI dispatch channel"),
            "ffi_dispatch_completions": .init(Double(completions), "counter", help: "FFI step events completed"),
            "ffi_dispatch_timeouts": .init(Double(timeouts), "counter", help: "FFI step events timed out"),
        ]
    }
}
