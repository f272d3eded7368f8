/// Graceful shutdown took longer than `WorkerDaemon.gracefulShutdownLimit` (the drain deadline plus
/// a margin, e.g. with the database unreachable): what was left was cancelled. Steps whose result
/// could not be stored stay `in_progress` (crash recovery or orchestration's staleness handling
/// takes them over); their messages were archived by the claim.
public struct ForcedShutdownError: Error, CustomStringConvertible {
    /// The limit that was exceeded.
    public let limit: Duration
    /// The error a cancelled service ended with, if any.
    public let cause: String?

    public var description: String {
        "graceful shutdown exceeded its limit of \(limit.components.seconds) s (drain deadline + margin); "
            + "what was left was cancelled" + (cause.map { " (a cancelled service ended with: \($0))" } ?? "")
    }
}
