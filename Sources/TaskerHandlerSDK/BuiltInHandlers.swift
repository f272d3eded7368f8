import Foundation
import TaskerStepModel

/// Diagnostic handlers every worker registers, for smoke tests and interop checks.
///
/// - `tasker.noop`: success `{}`.
/// - `tasker.echo`: success `{"context","inputs","config","dependencies":{name: result}}`.
/// - `tasker.fail`: failure; config `message`, `retryable` (default true), `error_type`,
///   `error_code`.
/// - `tasker.sleep`: sleeps config `ms` (cancellable), then success `{"slept_ms": ms}`.
public enum BuiltInHandlers {
    public static let noop = "tasker.noop"
    public static let echo = "tasker.echo"
    public static let fail = "tasker.fail"
    public static let sleep = "tasker.sleep"

    /// The built-in callables.
    public static let callables = [noop, echo, fail, sleep]

    /// Registers the four handlers.
    public static func register(into registry: HandlerRegistry) {
        registry.register(noop, NoopHandler())
        registry.register(echo, EchoHandler())
        registry.register(fail, FailHandler())
        registry.register(sleep, SleepHandler())
    }

    /// `tasker.noop`.
    public struct NoopHandler: StepHandler {
        public init() {}
        public func call(_ context: StepContext) async throws -> StepHandlerResult {
            .success(.emptyObject)
        }
    }

    /// `tasker.echo`.
    public struct EchoHandler: StepHandler {
        public init() {}
        public func call(_ context: StepContext) async throws -> StepHandlerResult {
            let dependencies = context.dependencyResults.mapValues(\.result)
            return .success(
                .object([
                    "context": context.taskContext,
                    "inputs": context.stepInputs,
                    "config": context.stepConfig,
                    "dependencies": .object(dependencies),
                ]))
        }
    }

    /// `tasker.fail`.
    public struct FailHandler: StepHandler {
        /// The message when the config has none.
        public static let defaultMessage = "tasker.fail: intentional failure requested by step configuration"

        public init() {}
        public func call(_ context: StepContext) async throws -> StepHandlerResult {
            let message = context.config("message")?.stringValue ?? Self.defaultMessage
            let retryable = context.config("retryable")?.boolValue ?? true
            let errorType = context.config("error_type")?.stringValue ?? StepFailure.defaultErrorType
            let errorCode = context.config("error_code")?.stringValue
            return .failure(
                StepFailure(
                    message: message, errorType: errorType, errorCode: errorCode,
                    retryable: retryable))
        }
    }

    /// `tasker.sleep`.
    public struct SleepHandler: StepHandler {
        public init() {}
        public func call(_ context: StepContext) async throws -> StepHandlerResult {
            let millis = max(0, context.config("ms")?.intValue ?? 0)
            try await Task.sleep(for: .milliseconds(millis))
            return .success(.object(["slept_ms": .int(Int64(millis))]))
        }
    }
}
