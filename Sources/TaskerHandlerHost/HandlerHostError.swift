/// Why a ``HandlerHost`` could not start or serve.
public enum HandlerHostError: Error, Equatable, CustomStringConvertible {
    /// `libTaskerWorkerFFI.so` was not found; `lookedAt` lists the paths tried.
    case libraryNotFound(lookedAt: [String])
    /// The library was found but could not be loaded, or lacks an entry point of the C ABI.
    case libraryUnusable(path: String, reason: String)
    /// The embedded worker refused to start: configuration, templates or database (the worker's
    /// own message, which names what was wrong and where).
    case bootstrapFailed(String)
    /// ``HandlerHost/run()`` was called while the host already runs.
    case alreadyRunning
    /// The embedded worker stopped without being asked to (a service of its group ended or failed:
    /// its log says which); the host stopped serving with it.
    case workerStopped

    public var description: String {
        switch self {
        case .libraryNotFound(let paths):
            "libTaskerWorkerFFI.so not found; looked at: \(paths.joined(separator: ", ")) (set TASKER_WORKER_LIBRARY "
                + "to the library's path, or build it once in the worker's checkout: swift build --product TaskerWorkerFFI)"
        case .libraryUnusable(let path, let reason): "\(path) cannot be used: \(reason)"
        case .bootstrapFailed(let message): "the embedded worker did not start: \(message)"
        case .alreadyRunning: "this handler host already runs"
        case .workerStopped: "the embedded worker stopped by itself (its log says why); the handler host stopped with it"
        }
    }
}
