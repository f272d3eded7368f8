import Foundation
import Synchronization

/// Starts test subprocesses one at a time. CI saw Foundation's `Process.run()` crash in `memcpy`
/// (a bad pointer one byte past a page) while other tests spawned processes at the same moment
/// (`CommandLineTests` next to the broker tests' `rabbitmqctl`). `run()` returns once the child is
/// spawned, so serialising it costs milliseconds and leaves the children running in parallel.
package enum ProcessLaunch {
    private static let lock = Mutex(())

    /// `process.run()` with no other test process being launched at the same time.
    package static func run(_ process: Process) throws {
        try lock.withLock { _ in try process.run() }
    }
}
