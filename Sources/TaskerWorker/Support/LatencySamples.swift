import Synchronization
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The most recent `capacity` latencies of one kind (a ring: memory stays bounded however long the
/// worker runs), summarised as count and percentiles on demand. Recording is one lock and one store.
final class LatencySamples: Sendable {
    private struct Ring {
        var samples: [Duration] = []
        var next = 0
        var total = 0
    }

    private let ring = Mutex(Ring())
    package let capacity: Int

    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    package func record(_ latency: Duration) {
        ring.withLock { ring in
            if ring.samples.count < capacity {
                ring.samples.append(latency)
            } else {
                ring.samples[ring.next] = latency
            }
            ring.next = (ring.next + 1) % capacity
            ring.total += 1
        }
    }

    /// Percentiles of the samples held now (`count`: all ever recorded).
    package var summary: Summary {
        let (samples, total) = ring.withLock { ($0.samples, $0.total) }
        guard !samples.isEmpty else { return Summary(count: total) }
        let sorted = samples.map { $0.inSeconds * 1_000_000 }.sorted()
        func percentile(_ p: Double) -> Double {
            let k = Double(sorted.count - 1) * p
            let low = Int(k)
            let high = min(low + 1, sorted.count - 1)
            return sorted[low] + (sorted[high] - sorted[low]) * (k - Double(low))
        }
        return Summary(count: total, p50: percentile(0.5), p99: percentile(0.99), max: sorted.last)
    }

    /// Microseconds; nil when nothing was recorded.
    struct Summary: Sendable, Equatable {
        package var count = 0
        package var p50: Double?
        package var p99: Double?
        package var max: Double?

        package var json: JSONValue {
            func value(_ v: Double?) -> JSONValue { v.map { .double(($0 * 10).rounded() / 10) } ?? .null }
            return .object(["count": .int(Int64(count)), "p50": value(p50), "p99": value(p99), "max": value(max)])
        }
    }
}
