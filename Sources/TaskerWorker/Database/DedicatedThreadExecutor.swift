import Foundation

/// A serial executor that runs its jobs on one dedicated OS thread.
///
/// libpq is blocking: connecting, executing a query and waiting on a socket all block the calling
/// thread. Each `PostgresConnection` actor runs on its own `DedicatedThreadExecutor`, so those blocking
/// calls never occupy a thread of Swift's cooperative pool or of a NIO event loop.
///
/// The thread keeps the executor alive until `shutdown()`, which the owning actor calls from its
/// `deinit`, when no further job can be enqueued. Jobs queued before shutdown are still run.
final class DedicatedThreadExecutor: SerialExecutor, @unchecked Sendable {
    // Safety of @unchecked Sendable: `jobs`, `isShutdown` and `threadExited` are only read or
    // written while holding `condition` (an NSCondition: a mutex plus a condition variable), and
    // `name` is immutable.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var isShutdown = false
    private var threadExited = false
    let name: String

    init(name: String) {
        self.name = name
        // The thread holds the executor strongly until `shutdown()` lets it exit.
        let thread = Thread { self.runLoop() }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        condition.lock()
        if threadExited {
            condition.unlock()
            // Unreachable for a correctly owned executor (shutdown happens in the owner's deinit);
            // run the job here rather than losing it.
            unowned.runSynchronously(on: asUnownedSerialExecutor())
            return
        }
        jobs.append(unowned)
        condition.signal()
        condition.unlock()
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Lets the thread finish the queued jobs and exit.
    func shutdown() {
        condition.lock()
        isShutdown = true
        condition.signal()
        condition.unlock()
    }

    private func runLoop() {
        while true {
            condition.lock()
            while jobs.isEmpty && !isShutdown {
                condition.wait()
            }
            if jobs.isEmpty && isShutdown {
                threadExited = true
                condition.unlock()
                break
            }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch {
                job.runSynchronously(on: asUnownedSerialExecutor())
            }
        }
    }
}
