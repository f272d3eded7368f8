import CLibPQ
import Foundation
import Logging
import Synchronization

/// libpq's cancel object (`PGcancel`) of one session, shared between the connection's thread and
/// the threads that send a cancel request.
///
/// Safety of @unchecked Sendable: `pointer` is immutable; libpq documents `PQcancel` as safe to call
/// from any thread (even a signal handler) on a `PGcancel` object, and the object is freed only in
/// `deinit`, when no thread can be using it any more (each sender holds a strong reference).
final class CancelRequestHandle: @unchecked Sendable {
    private let pointer: OpaquePointer

    init?(connection: OpaquePointer) {
        guard let cancel = PQgetCancel(connection) else { return nil }
        pointer = cancel
    }

    deinit { PQfreeCancel(pointer) }

    /// Asks the server to cancel the session's running statement. Blocking (it opens a short-lived
    /// connection to the server): call it on a thread of its own, never on the cooperative pool.
    func send() -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let sent = buffer.withUnsafeMutableBufferPointer { PQcancel(pointer, $0.baseAddress, 256) }
        return sent == 1 ? nil : String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Cancels a connection's running statement when the task waiting on it is cancelled
/// (`PostgresConnection.cancellable`): the statement then ends promptly with a `cancelled` error
/// instead of running until it finishes or hits `statement_timeout`, and the connection stays usable.
///
/// The connection's thread marks each statement (`begin`/`end`); a cancellation from any thread
/// sends `PQcancel` for the statement running then, on a thread of its own (the request opens a
/// connection to the server, which must not block the cooperative pool). A cancellation while no
/// statement runs is remembered until the end of the scope: the next statement fails at once
/// without being sent.
final class StatementCanceller: Sendable {
    private struct State {
        var handle: CancelRequestHandle?
        /// Nesting depth of statements on the connection's thread (a rollback inside a pipeline).
        var depth = 0
        /// The running statement (0: none).
        var running: UInt64 = 0
        var nextStatement: UInt64 = 1
        /// The statement a cancel was sent for.
        var cancelled: UInt64 = 0
        /// Cancelled while nothing ran: the next statement of the scope fails at once.
        var pending = false
    }

    private let state = Mutex(State())
    /// Ends the connection's socket wait (`SocketWaiter.wake`), so the statement loop sees the
    /// cancellation even when the server never answers.
    private let wake: @Sendable () -> Void

    init(wake: @escaping @Sendable () -> Void) {
        self.wake = wake
    }

    /// True while a cancel was requested for the statement running now.
    var isCancellingStatement: Bool {
        state.withLock { $0.running != 0 && $0.cancelled == $0.running }
    }

    /// The session is open: `handle` cancels its statements.
    func connected(_ handle: CancelRequestHandle?) {
        state.withLock { $0.handle = handle }
    }

    /// The session is closed: nothing to cancel any more.
    func disconnected() {
        state.withLock { $0.handle = nil }
    }

    /// A statement starts (connection's thread). Throws `cancelled` when the scope was cancelled.
    func begin() throws(PostgresError) {
        let cancelled = state.withLock { state -> Bool in
            if state.pending { return true }
            if state.depth == 0 {
                state.running = state.nextStatement
                state.nextStatement += 1
            }
            state.depth += 1
            return false
        }
        if cancelled {
            throw PostgresError(.cancelled, "the statement was not sent: the task waiting for it was cancelled")
        }
    }

    /// The statement ended (connection's thread); true when a cancel was sent for it.
    @discardableResult
    func end() -> Bool {
        state.withLock { state -> Bool in
            state.depth = max(0, state.depth - 1)
            let wasCancelled = state.cancelled != 0 && state.cancelled == state.running
            if state.depth == 0 { state.running = 0 }
            return wasCancelled
        }
    }

    /// The task waiting on this connection was cancelled (any thread): the running statement is
    /// cancelled by the server; with none running, the scope's next statement fails at once.
    func cancel(logger: Logger) {
        enum Decision {
            case remember, already
            case cancel(CancelRequestHandle?)
        }
        let decision = state.withLock { state -> Decision in
            guard state.running != 0 else {
                state.pending = true
                return .remember
            }
            guard state.cancelled != state.running else { return .already }
            state.cancelled = state.running
            return .cancel(state.handle)
        }
        guard case .cancel(let handle) = decision else { return }
        // The statement loop starts its grace period; the server is asked to cancel meanwhile.
        wake()
        guard let handle else { return }
        let thread = Thread {
            if let failure = handle.send() {
                logger.debug("could not send a cancel request", metadata: ["error": "\(failure)"])
            }
        }
        thread.name = "pg-cancel"
        thread.start()
    }

    /// The cancellable scope ended: a remembered cancellation no longer applies (the connection goes
    /// back to its pool, to another task).
    func endScope() {
        state.withLock { $0.pending = false }
    }
}
