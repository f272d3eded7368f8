import Dispatch
import Synchronization

/// How every entry point runs: the body's error becomes the status and the thread's last error;
/// success clears it. Nothing escapes as a Swift error or a trap.
enum FFICall {
    static func run(_ body: () throws(FFIError) -> Void) -> Int32 {
        do {
            try body()
            LastError.set(nil)
            return FFIStatus.ok.rawValue
        } catch {
            LastError.set(error.message)
            return error.status.rawValue
        }
    }

    /// Runs `operation` on Swift's cooperative pool and blocks only the calling (foreign) thread
    /// until it finishes. Never call from a task of the pool itself (the entry points are called by
    /// foreign threads only).
    static func blocking<T: Sendable>(_ operation: @escaping @Sendable () async throws(FFIError) -> T) throws(FFIError) -> T {
        let done = DispatchSemaphore(value: 0)
        let box = OutcomeBox<T>()
        Task {
            let result: Result<T, FFIError>
            do throws(FFIError) {
                result = .success(try await operation())
            } catch {
                result = .failure(error)
            }
            box.outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        // Set before the signal; the semaphore orders the two.
        guard let result = box.outcome.withLock({ $0 }) else {
            throw FFIError(.internal, "a blocking call finished without an outcome")
        }
        return try result.get()
    }
}

/// The outcome of a blocking call, handed from the task to the waiting thread.
private final class OutcomeBox<T: Sendable>: Sendable {
    let outcome = Mutex<Result<T, FFIError>?>(nil)
}
