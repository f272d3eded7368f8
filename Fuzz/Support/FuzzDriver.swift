import CTaskerFuzz
import Foundation

@testable import TaskerPostgres

/// The `main` of every fuzz target: libFuzzer (`LLVMFuzzerRunDriver`) calls `check` with each input,
/// on the kind of thread the product decodes `jsonb` rows on: a database connection's own thread
/// (`DedicatedThreadExecutor`, whose stack, `threadStackSize`, is the product's smallest). libFuzzer's
/// own 8 MiB main thread would hide a recursion that overflows the product's stack; a stack overflow
/// there is a crash libFuzzer reports (AddressSanitizer names it `stack-overflow`).
public enum FuzzDriver {
    /// Set once in `run`, before libFuzzer starts; read by each input after.
    nonisolated(unsafe) private static var check: (@Sendable ([UInt8]) -> Void)?
    private static let thread: ConnectionThread = {
        do {
            return try ConnectionThread()
        } catch {
            fatalError("the fuzz driver cannot start its thread: \(error)")
        }
    }()

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

    /// Runs `check` with one input on the connection thread; libFuzzer's thread waits for it (it is
    /// not a thread of Swift's cooperative pool).
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

/// An actor on a `DedicatedThreadExecutor`, as each `PostgresConnection` is: what it runs, runs on
/// that executor's thread.
private actor ConnectionThread {
    private let executor: DedicatedThreadExecutor

    init() throws {
        executor = try DedicatedThreadExecutor(name: "fuzz-input")
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    func run(_ body: @Sendable () -> Void) { body() }
}

/// libFuzzer's own `main` (in the archive `-sanitize=fuzzer` links) refers to this symbol, so it must
/// exist although the targets start libFuzzer from their own `main` (`FuzzDriver.run`); it runs the
/// same check.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzDriver.runOne(size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
