import Foundation
import Synchronization
import TaskerWorker
import Testing

/// The lines a `WorkerLogHandler` writes, kept in memory (`output`) for a test to read.
package final class LogCapture: Sendable {
    package init() {}

    private let lines = Mutex<[String]>([])
    package var output: LogOutput { LogOutput { line in self.lines.withLock { $0.append(line) } } }
    package var all: [String] { lines.withLock { $0 } }

    /// Every line parsed as a JSON object (a line that does not parse fails the test).
    package func objects() throws -> [[String: Any]] {
        try all.map { line in
            #expect(line.hasSuffix("\n") && line.dropLast().firstIndex(of: "\n") == nil, "one object per line: \(line)")
            return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
    }
}
