import CTaskerFuzz
import Foundation

@testable import TaskerPostgres

/// The `main` of every fuzz target: libFuzzer (`LLVMFuzzerRunDriver`) calls `check` with each input,
/// on a thread whose stack is the product's smallest (`DedicatedThreadExecutor.threadStackSize`, the
/// database connection threads that decode `jsonb` rows): libFuzzer's own 8 MiB main thread would hide
/// a recursion that overflows the product's stack.
public enum FuzzDriver {
    /// Set once in `run`, before libFuzzer starts; read by each input after.
    nonisolated(unsafe) private static var check: (@Sendable ([UInt8]) -> Void)?
    private static let thread = SmallStackThread(stackSize: DedicatedThreadExecutor.threadStackSize)

    /// Runs libFuzzer with the process's arguments (fuzzing, or each file named once) and exits with its status.
    public static func run(_ check: @escaping @Sendable ([UInt8]) -> Void) -> Never {
        self.check = check
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        let status = tasker_fuzz_run_driver(&argc, &argv) { data, size in
            let bytes = size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size))
            FuzzDriver.runOne(bytes)
            return 0
        }
        exit(status)
    }

    fileprivate static func runOne(_ bytes: [UInt8]) {
        guard let check else { return }
        thread.run { check(bytes) }
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
