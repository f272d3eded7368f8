import Logging

extension PostgresConnection {
    /// Runs `operation` (statements on this connection) so that cancelling the calling task cancels
    /// the statement running then (`PQcancel`): it ends promptly with a `cancelled` error, and the
    /// connection stays usable. A cancellation between statements makes the scope's next statement
    /// fail at once. (A cancel request that reaches the server only after its statement finished
    /// may hit the next statement of this session: that one fails with SQLSTATE 57014, retryable.)
    public nonisolated func cancellable<T>(_ operation: () async throws -> T) async rethrows -> T {
        defer { canceller.endScope() }
        return try await withTaskCancellationHandler {
            try await operation()
        } onCancel: { [canceller, logger] in
            canceller.cancel(logger: logger)
        }
    }

    /// Cancels the statement running now inside `cancellable` (as cancelling its task does); with
    /// none running, the scope's next statement fails at once. Any thread.
    public nonisolated func cancelStatement() {
        canceller.cancel(logger: logger)
    }

    /// Runs one statement's libpq calls, marked for `cancellable`: a server cancel we asked for
    /// becomes a `cancelled` error.
    func runStatement<T>(_ body: () throws(PostgresError) -> T) throws(PostgresError) -> T {
        try canceller.begin()
        do {
            let value = try body()
            canceller.end()
            return value
        } catch {
            var failure = error
            if canceller.end(), failure.sqlState == "57014" {
                failure.kind = .cancelled
                failure.message = "the statement was cancelled because the task waiting for it was cancelled (\(failure.message))"
            }
            throw failure
        }
    }
}
