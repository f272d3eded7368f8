import Foundation
import Metrics
import Synchronization
import TaskerHTTP

/// A swift-metrics backend that keeps every metric in memory and renders the Prometheus text
/// format 0.0.4 (`render()`), or structured families (`snapshot()`) for JSON endpoints.
///
/// - Counters and floating-point counters → `counter`; gauges and meters → `gauge`; recorders →
///   `histogram` with buckets; timers → `histogram` in **seconds** (the name gets a `_seconds`
///   suffix unless it has one).
/// - Labels become metric names with dots and other invalid characters mapped to `_`; dimension
///   names likewise (Hummingbird's `MetricsMiddleware` uses OTel names like `http.request.method`).
/// - Making a metric that exists (same name and dimensions) returns the existing handler, so
///   `Counter(label:)` may be created at each use; `destroy` removes the series.
/// - A name used for two different kinds keeps the first; the later kind gets its kind appended
///   (`name_gauge`), because a Prometheus family has exactly one type.
package final class PrometheusMetricsFactory: MetricsFactory, Sendable {
    /// Latency buckets in seconds (1 ms … 60 s), the default for recorders and timers.
    static let defaultLatencyBuckets: [Double] = [
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
    ]

    enum SeriesKind: String {
        case counter
        case floatingPointCounter = "float_counter"
        case gauge, meter, histogram, timer

        var prometheusKind: MetricFamily.Kind {
            switch self {
            case .counter, .floatingPointCounter: return .counter
            case .gauge, .meter: return .gauge
            case .histogram, .timer: return .histogram
            }
        }
    }

    private struct Family {
        var kind: SeriesKind
        var series: [[MetricLabel]: any PrometheusSeries] = [:]
    }

    private struct Registry {
        var families: [String: Family] = [:]
        var owners: [ObjectIdentifier: (name: String, labels: [MetricLabel])] = [:]
        var help: [String: String] = [:]
        var buckets: [String: [Double]] = [:]
    }

    private let registry = Mutex(Registry())
    private let defaultBuckets: [Double]

    /// - Parameter defaultBuckets: upper bounds for histograms without their own (`setBuckets`).
    package init(defaultBuckets: [Double] = PrometheusMetricsFactory.defaultLatencyBuckets) {
        self.defaultBuckets = Self.normalized(defaultBuckets)
    }

    /// HELP text for the metric made from `label` (by default the label itself).
    func setHelp(_ help: String, for label: String) {
        registry.withLock { $0.help[PrometheusText.metricName(label)] = help }
    }

    /// Bucket upper bounds for histograms made from `label` after this call (timers: seconds).
    func setBuckets(_ buckets: [Double], for label: String) {
        let normalized = Self.normalized(buckets)
        registry.withLock {
            $0.buckets[PrometheusText.metricName(label)] = normalized
            $0.buckets[PrometheusText.metricName(Self.timerName(label))] = normalized
        }
    }

    private static func normalized(_ buckets: [Double]) -> [Double] {
        Array(Set(buckets.filter { $0.isFinite })).sorted()
    }

    static func timerName(_ label: String) -> String {
        let name = PrometheusText.metricName(label)
        return name.hasSuffix("_seconds") ? name : name + "_seconds"
    }

    // MARK: - MetricsFactory

    package func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        make(PrometheusText.metricName(label), dimensions, .counter) { _ in CounterSeries() }
    }

    package func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        make(PrometheusText.metricName(label), dimensions, .floatingPointCounter) { _ in FloatingPointCounterSeries() }
    }

    package func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        if aggregate {
            return make(PrometheusText.metricName(label), dimensions, .histogram) { HistogramSeries(buckets: $0, scale: 1) }
        }
        return make(PrometheusText.metricName(label), dimensions, .gauge) { _ in GaugeSeries() }
    }

    package func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        make(PrometheusText.metricName(label), dimensions, .meter) { _ in GaugeSeries() }
    }

    package func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        make(Self.timerName(label), dimensions, .timer) { HistogramSeries(buckets: $0, scale: 1e-9) }
    }

    package func destroyCounter(_ handler: any CounterHandler) { destroy(handler) }
    package func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { destroy(handler) }
    package func destroyRecorder(_ handler: any RecorderHandler) { destroy(handler) }
    package func destroyMeter(_ handler: any MeterHandler) { destroy(handler) }
    package func destroyTimer(_ handler: any TimerHandler) { destroy(handler) }

    private func make<Series: PrometheusSeries>(
        _ baseName: String, _ dimensions: [(String, String)], _ kind: SeriesKind,
        _ create: ([Double]) -> Series
    ) -> Series {
        let labels = dimensions.map { MetricLabel($0.0, $0.1) }.sorted { $0.name < $1.name }
        return registry.withLock { registry in
            var name = baseName
            if let existing = registry.families[name], existing.kind != kind { name = "\(baseName)_\(kind.rawValue)" }
            var family = registry.families[name] ?? Family(kind: kind)
            if let series = family.series[labels] as? Series { return series }
            let series = create(registry.buckets[name] ?? registry.buckets[baseName] ?? defaultBuckets)
            family.series[labels] = series
            registry.families[name] = family
            registry.owners[ObjectIdentifier(series)] = (name, labels)
            return series
        }
    }

    private func destroy(_ handler: AnyObject) {
        registry.withLock { registry in
            guard let owner = registry.owners.removeValue(forKey: ObjectIdentifier(handler)) else { return }
            registry.families[owner.name]?.series[owner.labels] = nil
            if registry.families[owner.name]?.series.isEmpty == true { registry.families[owner.name] = nil }
        }
    }

    // MARK: - Output

    /// Every family, sorted by name, its series sorted by labels.
    package func snapshot() -> [MetricFamily] {
        let (families, help) = registry.withLock { ($0.families, $0.help) }
        return families.keys.sorted().compactMap { name in
            guard let family = families[name] else { return nil }
            var result = MetricFamily(name: name, kind: family.kind.prometheusKind, help: help[name] ?? name)
            let series = family.series.sorted { $0.key.lexicographicallyPrecedes($1.key) { ($0.name, $0.value) < ($1.name, $1.value) } }
            for (labels, handler) in series {
                result.samples += handler.samples(name: name, labels: labels)
            }
            return result
        }
    }

    /// The Prometheus text of every metric.
    package func render() -> String { PrometheusText.render(snapshot()) }
}

/// A series the factory can render.
protocol PrometheusSeries: AnyObject, Sendable {
    func samples(name: String, labels: [MetricLabel]) -> [MetricSample]
}

/// `counter`: a lock-free `Int64`.
final class CounterSeries: CounterHandler, PrometheusSeries {
    private let value = Atomic<Int64>(0)

    func increment(by amount: Int64) { value.wrappingAdd(amount, ordering: .relaxed) }
    func reset() { value.store(0, ordering: .relaxed) }
    var current: Int64 { value.load(ordering: .relaxed) }

    func samples(name: String, labels: [MetricLabel]) -> [MetricSample] {
        [MetricSample(name: name, labels: labels, value: Double(current))]
    }
}

/// `counter` of `Double` increments.
final class FloatingPointCounterSeries: FloatingPointCounterHandler, PrometheusSeries {
    private let value = Mutex<Double>(0)

    func increment(by amount: Double) {
        guard amount.isFinite, amount > 0 else { return }
        value.withLock { $0 += amount }
    }

    func reset() { value.withLock { $0 = 0 } }

    func samples(name: String, labels: [MetricLabel]) -> [MetricSample] {
        [MetricSample(name: name, labels: labels, value: value.withLock { $0 })]
    }
}

/// `gauge`: the last value set (a `Gauge`), or a value moved up and down (a `Meter`).
final class GaugeSeries: RecorderHandler, MeterHandler, PrometheusSeries {
    private let value = Mutex<Double>(0)

    func record(_ value: Int64) { set(Double(value)) }
    func record(_ value: Double) { set(value) }
    func set(_ value: Int64) { set(Double(value)) }
    func set(_ value: Double) { self.value.withLock { $0 = value } }
    func increment(by amount: Double) { value.withLock { $0 += amount } }
    func decrement(by amount: Double) { value.withLock { $0 -= amount } }

    func samples(name: String, labels: [MetricLabel]) -> [MetricSample] {
        [MetricSample(name: name, labels: labels, value: value.withLock { $0 })]
    }
}

/// `histogram`: cumulative buckets, `_sum` and `_count`. `scale` converts recorded values (1e-9
/// turns a timer's nanoseconds into seconds).
final class HistogramSeries: RecorderHandler, TimerHandler, PrometheusSeries {
    private struct State {
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }

    let bounds: [Double]
    private let scale: Double
    private let state: Mutex<State>

    init(buckets: [Double], scale: Double) {
        self.bounds = buckets
        self.scale = scale
        self.state = Mutex(State(counts: Array(repeating: 0, count: buckets.count)))
    }

    func record(_ value: Int64) { observe(Double(value) * scale) }
    func record(_ value: Double) { observe(value * scale) }
    func recordNanoseconds(_ duration: Int64) { observe(Double(duration) * scale) }

    private func observe(_ value: Double) {
        guard !value.isNaN else { return }
        let index = bounds.firstIndex { value <= $0 }
        state.withLock { state in
            if let index { state.counts[index] += 1 }
            state.sum += value
            state.count += 1
        }
    }

    func samples(name: String, labels: [MetricLabel]) -> [MetricSample] {
        let state = state.withLock { $0 }
        var samples: [MetricSample] = []
        samples.reserveCapacity(bounds.count + 3)
        var cumulative: UInt64 = 0
        for (bound, count) in zip(bounds, state.counts) {
            cumulative += count
            samples.append(
                MetricSample(
                    name: name + "_bucket", labels: labels + [MetricLabel("le", PrometheusText.format(bound))],
                    value: Double(cumulative)))
        }
        samples.append(MetricSample(name: name + "_bucket", labels: labels + [MetricLabel("le", "+Inf")], value: Double(state.count)))
        samples.append(MetricSample(name: name + "_sum", labels: labels, value: state.sum))
        samples.append(MetricSample(name: name + "_count", labels: labels, value: Double(state.count)))
        return samples
    }
}
