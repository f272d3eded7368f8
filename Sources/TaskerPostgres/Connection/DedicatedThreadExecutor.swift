import Foundation

#if canImport(Glibc)
import Glibc
// On Linux the zero initializers of the pthread types come from the module map Dispatch ships.
#if canImport(CDispatch)
import CDispatch
#endif
#elseif canImport(Darwin)
import Darwin
#endif

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

    /// The stack of each connection's thread (1 MiB): the smallest stack the product decodes
    /// untrusted JSON on (a row's `jsonb` is decoded on it); the fuzz targets run their decoders on
    /// such a thread (`Fuzz/Checks/FuzzInputThread.swift`).
    static let threadStackSize = 1 << 20

    /// Starts the thread. Throws `SystemResourceError(.thread, …)` when the system refuses a new
    /// thread (`pthread_create` fails, e.g. `EAGAIN` at the process's thread limit) instead of
    /// leaving an executor whose jobs would never run.
    init(name: String) throws(SystemResourceError) {
        self.name = name
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, Self.threadStackSize)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        // The thread holds the executor strongly (this retain) until `shutdown()` lets it exit.
        let context = Unmanaged.passRetained(self).toOpaque()
        #if canImport(Glibc)
        var thread = pthread_t()
        #else
        var thread: pthread_t?
        #endif
        let rc = pthread_create(
            &thread, &attributes,
            { context in
                // `context` is never nil: it is the retained executor passed below.
                #if canImport(Glibc)
                let pointer = context!
                #else
                let pointer = context
                #endif
                let executor = Unmanaged<DedicatedThreadExecutor>.fromOpaque(pointer).takeRetainedValue()
                executor.setThreadName()
                executor.runLoop()
                return nil
            }, context)
        guard rc == 0 else {
            Unmanaged<DedicatedThreadExecutor>.fromOpaque(context).release()
            throw SystemResourceError(.thread, errno: rc)
        }
    }

    /// Names the calling thread (for debuggers and `top -H`; Linux keeps 15 bytes).
    private func setThreadName() {
        Thread.current.name = name
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
