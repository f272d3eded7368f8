import CTaskerFuzz
import Dispatch
import Foundation
import TaskerFuzzChecks

/// The `main` of every libFuzzer target: libFuzzer (`LLVMFuzzerRunDriver`) calls the target's check
/// with each input, on a ``FuzzInputThread`` (the product's smallest stack; a stack overflow there is a
/// crash libFuzzer reports, AddressSanitizer naming it `stack-overflow`).
public enum FuzzDriver {
    /// Set once in `run`, before libFuzzer starts; read by each input after.
    nonisolated(unsafe) private static var check: (@Sendable ([UInt8]) -> Void)?
    private static let thread: FuzzInputThread = {
        do {
            return try FuzzInputThread()
        } catch {
            fatalError("the fuzz driver cannot start its thread: \(error)")
        }
    }()

    /// Runs libFuzzer on `target` with the process's arguments (fuzzing, or each file named once)
    /// and exits with its status.
    public static func run(_ target: FuzzTarget) -> Never {
        self.check = target.check
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        let status = tasker_fuzz_run_driver(&argc, &argv) { data, size in
            let bytes = size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size))
            FuzzDriver.runOne(bytes)
            return 0
        }
        exit(status)
    }

    /// Runs the check with one input on the input thread; libFuzzer's thread waits for it (it is
    /// not a thread of Swift's cooperative pool). No breach log is bound: a broken contract aborts.
    fileprivate static func runOne(_ bytes: [UInt8]) {
        guard let check else { return }
        let done = DispatchSemaphore(value: 0)
        Task {
            await thread.run { check(bytes) }
            done.signal()
        }
        done.wait()
    }
}

/// libFuzzer's own `main` (in the archive `-sanitize=fuzzer` links) refers to this symbol, so it must
/// exist although the targets start libFuzzer from their own `main` (`FuzzDriver.run`); it runs the
/// same check.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzDriver.runOne(size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
