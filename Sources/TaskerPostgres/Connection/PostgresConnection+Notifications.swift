import CLibPQ

/// LISTEN / NOTIFY on a connection: subscribing to channels and waiting on the socket for what arrives.
extension PostgresConnection {
    /// Subscribes to a channel. The name is quoted, so dotted names such as
    /// `pgmq_message_ready.payments` work as upstream sends them.
    public func listen(_ channel: String) throws(PostgresError) {
        try execute("LISTEN \(try quoteIdentifier(channel))")
    }

    public func unlisten(_ channel: String) throws(PostgresError) {
        try execute("UNLISTEN \(try quoteIdentifier(channel))")
    }

    /// Returns the notifications that have arrived, waiting on the socket (not polling) up to
    /// `timeout` when none has. Returns an empty array on timeout or `interrupt()`. Throws
    /// `connectionClosed` when the server ends the session.
    public func waitForNotifications(timeout: Duration? = nil) throws(PostgresError) -> [PostgresNotification] {
        let conn = try liveHandle()
        var notes = try drainNotifications(conn)
        if !notes.isEmpty { return notes }
        let deadline = timeout.map { ContinuousClock.now.advanced(by: $0) }
        switch waiter.wait(socket: PQsocket(conn), for: .read, deadline: deadline) {
        case .woken, .timedOut:
            return []
        case .ready:
            notes = try drainNotifications(conn)
            return notes
        }
    }

    private func drainNotifications(_ conn: OpaquePointer) throws(PostgresError) -> [PostgresNotification] {
        if PQconsumeInput(conn) == 0 || PQstatus(conn) != CONNECTION_OK {
            let message = Self.errorMessage(conn)
            closeHandle()
            throw PostgresError(.connectionClosed, "connection lost while waiting for notifications: \(message)")
        }
        var notes: [PostgresNotification] = []
        while let notify = PQnotifies(conn) {
            let note = notify.pointee
            notes.append(
                PostgresNotification(
                    channel: String(cString: note.relname),
                    payload: note.extra.map { String(cString: $0) } ?? "",
                    backendPID: note.be_pid))
            PQfreemem(notify)
        }
        return notes
    }
}

/// A notification received on a LISTENed channel.
public struct PostgresNotification: Sendable, Equatable {
    public let channel: String
    public let payload: String
    /// Server process id of the session that sent it.
    public let backendPID: Int32

    /// A notification as the listener would deliver it (tests and fuzz checks feed the intake with it).
    package init(channel: String, payload: String, backendPID: Int32) {
        self.channel = channel
        self.payload = payload
        self.backendPID = backendPID
    }
}
