import Synchronization
import TaskerHTTP

/// The step pipeline's counters of one worker, each event counted once: `/metrics` renders them as
/// Prometheus counter families (`families(help:)`, names and labels of `StepMetrics.Name`) and
/// `/metrics/worker` sums them (`WorkerStatistics.snapshot`). A series is a counter name (a
/// swift-metrics style label, sanitised on output) and its labels, sorted by name.
package final class StepCounters: Sendable {
    /// One counter series.
    struct Series: Hashable, Sendable {
        var name: String
        var labels: [MetricLabel]
    }

    /// A copy of every series' value, taken under one lock.
    struct Values: Sendable {
        var series: [Series: Int]

        /// The sum of `name`'s series, or of those whose label `label` has `value`.
        func total(_ name: String, where label: String? = nil, is value: String? = nil) -> Int {
            series.reduce(0) { sum, entry in
                guard entry.key.name == name else { return sum }
                if let label, !entry.key.labels.contains(MetricLabel(label, value ?? "")) { return sum }
                return sum + entry.value
            }
        }
    }

    private let values = Mutex<[Series: Int]>([:])

    package init() {}

    /// Adds `amount` to the series `name{labels}`.
    func increment(_ name: String, by amount: Int = 1, _ labels: KeyValuePairs<String, String> = [:]) {
        let series = Series(name: name, labels: labels.map { MetricLabel($0.key, $0.value) }.sorted { $0.name < $1.name })
        values.withLock { $0[series, default: 0] &+= amount }
    }

    /// Every series' current value.
    var current: Values { Values(series: values.withLock { $0 }) }

    /// The counter families, sorted by name, their series by labels (as `PrometheusMetricsFactory`
    /// orders its own); `help` by counter name (the name itself when missing).
    func families(help: [String: String]) -> [MetricFamily] {
        let byName = Dictionary(grouping: current.series, by: { $0.key.name })
        return byName.keys.sorted { PrometheusText.metricName($0) < PrometheusText.metricName($1) }.map { name in
            var family = MetricFamily(name: name, kind: .counter, help: help[name] ?? PrometheusText.metricName(name))
            let series = byName[name, default: []].sorted {
                $0.key.labels.lexicographicallyPrecedes($1.key.labels) { ($0.name, $0.value) < ($1.name, $1.value) }
            }
            for (key, value) in series { family.add(Double(value), labels: key.labels) }
            return family
        }
    }
}
