import TaskerText

/// What a failed step's stored result (`StepExecutionResult` JSON) says about the failure, for
/// people (`tasker-dev submit --wait`, `task show`, the console): the error's type and message and,
/// where a handler of another language left them, the exception's type and its trace.
///
/// The SDKs store the exception in `metadata.custom` under different keys: tasker-py `traceback`
/// and `exception_type`, upstream's Ruby `exception_class` and `stack_trace`, ours `exception_type`
/// and `traceback` (Python), `backtrace` (Ruby), `stack` (TypeScript). The result's own
/// `error.backtrace` counts too. The first key present wins; a trace may be a string or an array of
/// lines. The console reads the same keys (``exceptionTypeKeys``, ``traceKeys``).
public struct FailureDetail: Sendable, Equatable {
    /// `error.error_type` (else `metadata.error_type`).
    public var errorType: String?
    /// `error.message` (else the error itself as text).
    public var message: String?
    /// The exception's class or type name, when the handler's SDK stored one.
    public var exceptionType: String?
    /// The exception's trace, lines joined with newlines.
    public var trace: String?

    /// `metadata.custom` keys naming the exception's type, in order of preference.
    public static let exceptionTypeKeys = ["exception_type", "exception_class", "exception"]
    /// `metadata.custom` keys holding the trace, in order of preference.
    public static let traceKeys = ["traceback", "stack_trace", "backtrace", "stack"]

    public init(errorType: String? = nil, message: String? = nil, exceptionType: String? = nil, trace: String? = nil) {
        self.errorType = errorType
        self.message = message
        self.exceptionType = exceptionType
        self.trace = trace
    }

    /// The detail of a failed result; nil for a success or a document that is no result.
    public init?(result: JSONValue) {
        guard case .object(let members) = result, members["success"]?.boolValue == false else { return nil }
        let error = members["error"]
        let metadata = members["metadata"]
        let custom = metadata?["custom"]
        errorType = error?["error_type"]?.stringValue ?? metadata?["error_type"]?.stringValue
        message = error?["message"]?.stringValue ?? error?.stringValue ?? metadata?["error_message"]?.stringValue
        exceptionType = Self.exceptionTypeKeys.lazy.compactMap { custom?[$0]?.stringValue }.first
        trace = (Self.traceKeys.lazy.compactMap { Self.lines(custom?[$0]) }.first) ?? Self.lines(error?["backtrace"])
    }

    /// A trace as text: a string, or an array of strings joined by newlines; nil when empty or absent.
    private static func lines(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let text)?: return text.isEmpty ? nil : text
        case .array(let items)?:
            let lines = items.compactMap(\.stringValue)
            return lines.isEmpty ? nil : lines.joined(separator: "\n")
        default: return nil
        }
    }
}
