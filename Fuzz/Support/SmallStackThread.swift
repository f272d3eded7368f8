import Foundation

#if canImport(Glibc)
import Glibc
#if canImport(CDispatch)
import CDispatch
#endif
#elseif canImport(Darwin)
import Darwin
#endif

/// One OS thread with a stack of a given size that runs one job at a time for its caller, who waits.
/// A stack overflow on it is a crash libFuzzer reports (and AddressSanitizer names `stack-overflow`).
final class SmallStackThread: @unchecked Sendable {
    // Safety of @unchecked Sendable: `job` is written by the caller before `start.signal()` and read
    // by the thread after `start.wait()`; the thread clears it before `done.signal()`, and the caller
    // writes it again only after `done.wait()`. The two semaphores order every access.
    private var job: (@Sendable () -> Void)?
    private let start = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    init(stackSize: Int) {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, stackSize)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        // The thread holds this object for the life of the process (this retain is never released).
        let context = Unmanaged.passRetained(self).toOpaque()
        #if canImport(Glibc)
        var thread = pthread_t()
        #else
        var thread: pthread_t?
        #endif
        let rc = pthread_create(
            &thread, &attributes,
            { context in
                #if canImport(Glibc)
                let pointer = context!
                #else
                let pointer = context
                #endif
                Unmanaged<SmallStackThread>.fromOpaque(pointer).takeUnretainedValue().loop()
            }, context)
        precondition(rc == 0, "pthread_create failed (\(rc))")
    }

    /// Runs `body` on the thread and returns when it finished.
    func run(_ body: @escaping @Sendable () -> Void) {
        job = body
        start.signal()
        done.wait()
    }

    private func loop() -> Never {
        while true {
            start.wait()
            let body = job
            body?()
            job = nil
            done.signal()
        }
    }
}
