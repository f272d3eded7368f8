import TaskerWorker

/// `tasker_status` of `tasker_worker.h`.
enum FFIStatus: Int32, Sendable {
    case ok = 0
    case invalidArgument = 1
    case notRunning = 2
    case alreadyRunning = 3
    case unknownEvent = 4
    case bootstrap = 5
    case refused = 6
    case client = 7
    case `internal` = 99
}

/// A failed call: its status and the message `tasker_last_error` gives.
struct FFIError: Error, Sendable, CustomStringConvertible {
    let status: FFIStatus
    let message: String

    init(_ status: FFIStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    var description: String { message }

    static func invalid(_ message: String) -> FFIError { FFIError(.invalidArgument, message) }

    static let notRunning = FFIError(
        .notRunning, "no worker is running in this process (call tasker_worker_bootstrap first; it may have been stopped)")

    /// The channel's refusal as a status: malformed input, or an event id that names nothing pending.
    init(_ error: ForeignDispatchError) {
        switch error {
        case .invalidArgument(let text): self.init(.invalidArgument, text)
        case .unknownEvent(let text): self.init(.unknownEvent, text)
        }
    }
}
