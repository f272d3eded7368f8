#if DEBUG
@testable import TaskerPostgres

/// The kind of thread the product decodes untrusted rows on: a database connection's own thread
/// (`DedicatedThreadExecutor`, whose stack, `threadStackSize`, is the product's smallest). A caller's
/// 8 MiB main thread, or the cooperative pool's, would hide a recursion that overflows the product's
/// stack. libFuzzer's driver and the test suite's replay both run each input here.
public actor FuzzInputThread {
    private let executor: DedicatedThreadExecutor

    /// Starts the thread; `name` names it in a debugger or a crash report.
    public init(name: String = "fuzz-input") throws {
        executor = try DedicatedThreadExecutor(name: name)
    }

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Runs `body` on the thread.
    public func run(_ body: @Sendable () -> Void) { body() }
}
#endif
