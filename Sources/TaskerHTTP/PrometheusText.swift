import Foundation

/// The Prometheus text exposition format 0.0.4: names, escaping, numbers and rendering (the
/// worker's and the orchestration's `/metrics`).
package enum PrometheusText {
    /// The content type of a scrape response (format 0.0.4).
    package static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// A metric name made valid (`[a-zA-Z_:][a-zA-Z0-9_:]*`): dots, dashes and every other
    /// character become `_`, and a leading digit gets a `_` in front.
    package static func metricName(_ label: String) -> String {
        sanitize(label, allowColon: true)
    }

    /// A label name made valid (`[a-zA-Z_][a-zA-Z0-9_]*`); OTel-style `http.request.method`
    /// becomes `http_request_method`.
    package static func labelName(_ name: String) -> String {
        sanitize(name, allowColon: false)
    }

    private static func sanitize(_ text: String, allowColon: Bool) -> String {
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count + 1)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "_": result.unicodeScalars.append(scalar)
            case ":" where allowColon: result.unicodeScalars.append(scalar)
            default: result.unicodeScalars.append("_")
            }
        }
        if result.isEmpty { return "_" }
        if let first = result.unicodeScalars.first, ("0"..."9").contains(first) { result = "_" + result }
        return result
    }

    /// A label value escaped for the inside of double quotes: `\` → `\\`, `"` → `\"`, newline → `\n`.
    package static func escapeLabelValue(_ value: String) -> String {
        guard value.contains(where: { $0 == "\\" || $0 == "\"" || $0 == "\n" }) else { return value }
        var result = ""
        for character in value {
            switch character {
            case "\\": result += "\\\\"
            case "\"": result += "\\\""
            case "\n": result += "\\n"
            default: result.append(character)
            }
        }
        return result
    }

    /// HELP text escaped: `\` → `\\`, newline → `\n`.
    package static func escapeHelp(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// A sample value: integers without a fraction, `+Inf`, `-Inf`, `NaN`, else the shortest
    /// round-tripping decimal.
    package static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// `{a="1",b="2"}`, or nothing without labels.
    static func labels(_ labels: [MetricLabel]) -> String {
        guard !labels.isEmpty else { return "" }
        return "{" + labels.map { "\($0.name)=\"\(escapeLabelValue($0.value))\"" }.joined(separator: ",") + "}"
    }

    /// The exposition text of `families`, each with its HELP and TYPE lines, in the given order.
    package static func render(_ families: [MetricFamily]) -> String {
        var out = ""
        for family in families where !family.samples.isEmpty {
            out += "# HELP \(family.name) \(escapeHelp(family.help))\n"
            out += "# TYPE \(family.name) \(family.kind.rawValue)\n"
            for sample in family.samples {
                out += "\(sample.name)\(labels(sample.labels)) \(format(sample.value))\n"
            }
        }
        return out
    }
}

/// One label of a sample; names are already valid Prometheus label names.
package struct MetricLabel: Sendable, Hashable, Codable {
    package var name: String
    package var value: String

    package init(_ name: String, _ value: String) {
        self.name = PrometheusText.labelName(name)
        self.value = value
    }
}

/// One line of exposition: `name{labels} value` (a histogram family has `_bucket`, `_sum` and
/// `_count` samples).
package struct MetricSample: Sendable, Equatable {
    package var name: String
    package var labels: [MetricLabel]
    package var value: Double

    package init(name: String, labels: [MetricLabel] = [], value: Double) {
        self.name = name
        self.labels = labels
        self.value = value
    }
}

/// A metric family: one name, one type, one HELP text, its samples.
package struct MetricFamily: Sendable, Equatable {
    /// The Prometheus metric type.
    package enum Kind: String, Sendable, Codable {
        case counter, gauge, histogram, untyped
    }

    package var name: String
    package var kind: Kind
    package var help: String
    package var samples: [MetricSample]

    /// `name` is sanitised (`tasker.steps.claimed.total` → `tasker_steps_claimed_total`).
    package init(name: String, kind: Kind, help: String, samples: [MetricSample] = []) {
        self.name = PrometheusText.metricName(name)
        self.kind = kind
        self.help = help
        self.samples = samples
    }

    /// A family of one unlabelled or labelled value.
    package static func single(
        _ name: String, _ kind: Kind, help: String, value: Double,
        labels: [MetricLabel] = []
    ) -> MetricFamily {
        var family = MetricFamily(name: name, kind: kind, help: help)
        family.add(value, labels: labels)
        return family
    }

    /// Adds a sample named like the family.
    package mutating func add(_ value: Double, labels: [MetricLabel] = []) {
        samples.append(MetricSample(name: name, labels: labels, value: value))
    }
}
