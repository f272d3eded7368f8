import Foundation
import Synchronization
import TaskerPostgres

/// Load shedding (`handler_dispatch.load_shedding`): stop claiming at `capacity_threshold_percent`
/// of the handler permits in use; warn at `warning_threshold_percent`. The counts it is applied to
/// live in `WorkerCapacityState`.
package struct LoadShedding: Sendable, Equatable {
    package var enabled: Bool
    package var capacityThresholdPercent: Double
    package var warningThresholdPercent: Double
    /// At most this many claimed steps without a stored result (nil: no such bound). Handlers give
    /// their permit back before their result is stored, so without it a fast handler and a slow
    /// database would pile finished steps up in memory (about 3 KB each).
    var unstoredLimit: Int?

    package init(enabled: Bool, capacityThresholdPercent: Double, warningThresholdPercent: Double, unstoredLimit: Int? = nil) {
        self.enabled = enabled
        self.capacityThresholdPercent = capacityThresholdPercent
        self.warningThresholdPercent = warningThresholdPercent
        self.unstoredLimit = unstoredLimit
    }

    /// No shedding (components run on their own, e.g. in tests).
    package static let disabled = LoadShedding(enabled: false, capacityThresholdPercent: 100, warningThresholdPercent: 100)
}
