import Testing

/// Reading the Prometheus text format (0.0.4) the worker renders, for the metrics tests.
package enum PrometheusSamples {
    /// `series → value` for every sample line (`name{labels}` exactly as rendered).
    package static func parse(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " ") else { continue }
            let value = line[line.index(after: space)...]
            samples[String(line[..<space])] = value == "+Inf" ? .infinity : Double(value)
        }
        return samples
    }

    /// Every family has HELP then TYPE before its samples, each name once, every sample belongs
    /// to the family it follows.
    package static func checkWellFormed(_ text: String) throws {
        var seen: Set<String> = []
        var current: (name: String, kind: String)?
        var pendingHelp: String?
        for line in text.split(separator: "\n").map(String.init) {
            if line.hasPrefix("# HELP ") {
                pendingHelp = String(line.dropFirst(7).split(separator: " ", maxSplits: 1)[0])
            } else if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ")
                let name = String(parts[0])
                #expect(pendingHelp == name, "TYPE without HELP: \(line)")
                #expect(!seen.contains(name), "family twice: \(name)")
                #expect(["counter", "gauge", "histogram", "untyped", "summary"].contains(String(parts[1])))
                seen.insert(name)
                current = (name, String(parts[1]))
            } else {
                let current = try #require(current, "sample before any TYPE: \(line)")
                let sampleName = String(line.prefix { $0 != "{" && $0 != " " })
                let allowed =
                    current.kind == "histogram"
                    ? [current.name + "_bucket", current.name + "_sum", current.name + "_count"] : [current.name]
                #expect(allowed.contains(sampleName), "sample \(sampleName) under \(current.name)")
                #expect(sampleName.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" })
            }
        }
    }
}
