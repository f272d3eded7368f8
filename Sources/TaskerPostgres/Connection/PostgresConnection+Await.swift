import CLibPQ

extension PostgresConnection {
    /// How long a cancelled statement waits for the server to answer the cancel request before the
    /// connection is abandoned (closed): a server or network that does not answer at all
    /// (black-holed) cannot hold a cancelled task.
    static let cancelGrace: Duration = .seconds(1)

    /// The next result of the statement(s) sent, waiting on the socket (and this connection's wake
    /// pipe) instead of inside libpq, so that a cancellation can end the wait: a cancelled statement
    /// gets `cancelGrace` for the server's answer to `PQcancel`, then the connection is closed and
    /// the wait ends with a `connectionClosed` error naming the cancellation (whether the statement
    /// took effect is unknown then, as for any connection lost mid-statement:
    /// `leavesOutcomeUnknown`). nil when there are no more results.
    func nextResult(_ conn: OpaquePointer) throws(PostgresError) -> OpaquePointer? {
        var abandonAt: ContinuousClock.Instant?
        while PQisBusy(conn) == 1 {
            let socket = PQsocket(conn)
            guard socket >= 0 else { break }
            switch waiter.wait(socket: socket, for: .read, deadline: abandonAt) {
            case .ready:
                // A broken connection: PQgetResult reports the error.
                if PQconsumeInput(conn) == 0 { return PQgetResult(conn) }
            case .woken:
                // A wake-up left over from an earlier wait is ignored; a cancellation of this
                // statement starts the grace period.
                if abandonAt == nil, canceller.isCancellingStatement {
                    abandonAt = ContinuousClock.now.advanced(by: Self.cancelGrace)
                }
            case .timedOut:
                closeHandle()
                throw PostgresError(
                    .connectionClosed,
                    "the statement was abandoned: its task was cancelled and the server did not answer the cancel "
                        + "request within \(Self.cancelGrace); the connection is closed")
            }
        }
        return PQgetResult(conn)
    }

    /// Every result of the statement(s) sent, keeping the last (as `PQexec` does: after an error
    /// the server skips the rest, so an error is the last result).
    func lastResult(_ conn: OpaquePointer) throws(PostgresError) -> OpaquePointer? {
        var last: OpaquePointer?
        do {
            while let result = try nextResult(conn) {
                if let last { PQclear(last) }
                last = result
            }
        } catch {
            if let last { PQclear(last) }
            throw error
        }
        return last
    }
}
