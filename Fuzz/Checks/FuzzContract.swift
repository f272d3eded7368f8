import Foundation
import Synchronization

/// A decoder's contract, checked on each input. Under libFuzzer (`scripts/fuzz`) a broken contract
/// aborts, which libFuzzer reports as a crash and saves the input; under the test suite's replay
/// (`FuzzReplayTests`) it is recorded in the task's ``FuzzBreachLog`` and the replay goes on.
public enum FuzzContract {
    /// The log a replay collects broken contracts in; `nil` (libFuzzer's inputs) aborts instead.
    @TaskLocal public static var breaches: FuzzBreachLog?

    /// Reports `message` (and the place) unless `condition` holds.
    public static func require(
        _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
        file: StaticString = #fileID, line: UInt = #line
    ) {
        guard !condition() else { return }
        let report = "contract broken (\(file):\(line)): \(message())"
        if let breaches {
            breaches.record(report)
            return
        }
        FileHandle.standardError.write(Data("\(report)\n".utf8))
        abort()
    }
}

/// The broken contracts of a replay, in the order they were found.
public final class FuzzBreachLog: Sendable {
    private let reports = Mutex<[String]>([])

    public init() {}

    /// Adds one report.
    public func record(_ report: String) {
        reports.withLock { $0.append(report) }
    }

    /// Every report so far.
    public var all: [String] { reports.withLock { $0 } }
}
