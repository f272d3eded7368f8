/// Who asks for a pooled connection. The operator surface (REST/gRPC health, template and metrics
/// queries) has its own small budget inside the pool's maximum, so that no flood of probes can take
/// the connections the step pipeline needs. The background work of an idle worker (liveness lease,
/// crash-recovery scan, poll reads) holds at most one connection at once, so an idle worker needs
/// one pooled connection, never more, whatever the moments its loops happen to coincide.
public enum PostgresPoolLane: Sendable, Hashable {
    /// The step pipeline and everything else (the default).
    case pipeline
    /// The operator surface: at most `PostgresPoolConfiguration.operatorMaxConnections` at once.
    case `operator`
    /// Periodic background work: at most one connection at once (its callers take turns).
    case background
}

/// The pool's bookkeeping as a pure state machine: no I/O, no clock reads, no awaits. The
/// `PostgresConnectionPool` actor calls it synchronously and performs what it answers (open, check,
/// close a connection; resume a waiter), then reports back. Every open connection is counted from
/// the moment its opening is decided until its close has finished — idle, lent, being opened, taken
/// out for a liveness check (by an acquire or by maintenance), or being closed — so
/// `openCount <= maxConnections` holds after every transition, under any interleaving of the actor's
/// awaits, and a replacement is opened only once the connection it replaces is closed.
///
/// `Connection` is generic so that the interleavings can be tested without a database.
struct PostgresPoolState<Connection: AnyObject & Sendable>: Sendable {
    struct Entry: Sendable {
        let connection: Connection
        let openedAt: ContinuousClock.Instant
        var lastUsed: ContinuousClock.Instant
    }

    /// What the pool must do after a transition.
    enum Action: Sendable {
        /// Resume waiter `waiter` with this connection (already counted as lent to its lane).
        case resume(waiter: Int, Entry)
        /// Open a connection for this waiter (a slot is reserved for it); report with `opened` or
        /// `openFailed`.
        case open(OpenForWaiter)
        /// Close this connection; it stays counted (`closing`) until `closeFinished()` is reported.
        case close(Connection)
        /// Fail waiter `waiter` with the error of the open made for it (no longer waiting).
        case fail(waiter: Int)
    }

    /// A connection slot reserved for a waiter.
    struct OpenForWaiter: Sendable, Equatable {
        let waiter: Int
        let lane: PostgresPoolLane
    }

    let maxConnections: Int
    /// The most connections the operator lane holds at once (lent, being opened or checked for it).
    let operatorBudget: Int

    private(set) var idle: [Entry] = []
    private(set) var lent: [ObjectIdentifier: (entry: Entry, lane: PostgresPoolLane)] = [:]
    /// Being opened or checked on behalf of a lane's acquire (or a waiter).
    private(set) var reserved: [PostgresPoolLane: Int] = [:]
    /// Being opened or checked by maintenance.
    private(set) var maintaining = 0
    /// Being closed: counted until `closeFinished()`, so that no replacement is opened while the
    /// server still holds the old session.
    private(set) var closing = 0
    /// Callers waiting, first come first served within what their lane may take. `opening`: a
    /// connection is being opened for it (it may still get one given back first).
    private(set) var waiters: [(id: Int, lane: PostgresPoolLane, opening: Bool)] = []
    private(set) var isClosed = false

    init(maxConnections: Int, operatorBudget: Int) {
        self.maxConnections = max(1, maxConnections)
        // The pipeline keeps at least one connection of its own whenever the pool has two.
        self.operatorBudget = min(max(1, operatorBudget), max(1, self.maxConnections - 1))
    }

    /// Every open (or opening) connection.
    var openCount: Int { idle.count + lent.count + reserved.values.reduce(0, +) + maintaining + closing }

    /// Connections lent out or taken out for a check or being opened (everything not idle).
    var busyCount: Int { openCount - idle.count }

    /// What `lane` holds now.
    func held(by lane: PostgresPoolLane) -> Int {
        lent.values.count(where: { $0.lane == lane }) + reserved[lane, default: 0]
    }

    private func hasRoom(_ lane: PostgresPoolLane) -> Bool {
        switch lane {
        case .pipeline: true
        case .operator: held(by: lane) < operatorBudget
        case .background: held(by: lane) < 1
        }
    }

    // MARK: - Acquire

    /// An acquire's next step.
    enum AcquireStep: Sendable {
        /// Lend this idle connection once it is found usable (`lend` / `dropReserved`); it is
        /// counted as reserved for the lane meanwhile.
        case candidate(Entry)
        /// Open a new connection for the lane (counted as reserved); then `lend` or `dropReserved`.
        case open
        /// Wait as waiter `id` (registered here).
        case wait(id: Int)
        case closed
    }

    /// The next step of an acquire on `lane`. `waiterID` is the id to register when it must wait.
    mutating func acquire(_ lane: PostgresPoolLane, waiterID: Int) -> AcquireStep {
        if isClosed { return .closed }
        // An operator over its budget, or a background caller while the lane's connection is out, waits.
        guard hasRoom(lane) else {
            waiters.append((waiterID, lane, false))
            return .wait(id: waiterID)
        }
        // Earlier waiters of the same lane go first (unless a connection is already being opened
        // for them): no idle connection is taken ahead of them.
        let pending = unservedWaiters
        if !waiters.contains(where: { $0.lane == lane && !$0.opening }), let entry = idle.popLast() {
            reserved[lane, default: 0] += 1
            return .candidate(entry)
        }
        // Connections out for maintenance's check (or being opened by it) come back in a moment:
        // one per waiter is waited for rather than a new one opened (an idle worker whose lease
        // renewal fell on the check opened a second connection it then kept for idle_timeout).
        if openCount < maxConnections, maintaining <= pending {
            reserved[lane, default: 0] += 1
            return .open
        }
        waiters.append((waiterID, lane, false))
        return .wait(id: waiterID)
    }

    /// A reserved connection (candidate found usable, or opened) is lent to `lane`.
    mutating func lend(_ entry: Entry, to lane: PostgresPoolLane) {
        reserved[lane, default: 0] -= 1
        lent[ObjectIdentifier(entry.connection)] = (entry, lane)
    }

    /// A reserved slot is given up (the candidate was dead or too old, or opening failed): the
    /// connection, if any, is closed by the caller.
    mutating func dropReserved(_ lane: PostgresPoolLane) -> [Action] {
        reserved[lane, default: 0] -= 1
        return serveWaiters()
    }

    /// A reserved candidate was found dead or too old: it is closed (and stays counted until
    /// `closeFinished()`), its reservation given up.
    mutating func discardReserved(_ connection: Connection, _ lane: PostgresPoolLane) -> [Action] {
        reserved[lane, default: 0] -= 1
        return [closeAction(connection)] + serveWaiters()
    }

    /// A connection this state asked to close (`.close`) is closed: its slot is free now.
    mutating func closeFinished() -> [Action] {
        closing = max(0, closing - 1)
        return serveWaiters()
    }

    /// `.close(connection)`, counted as closing until `closeFinished()`.
    private mutating func closeAction(_ connection: Connection) -> Action {
        closing += 1
        return .close(connection)
    }

    /// Waiter `id` gave up (timeout, cancellation): what to do for the others (nil when it was no
    /// longer waiting).
    mutating func removeWaiter(_ id: Int) -> [Action]? {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
        waiters.remove(at: index)
        return serveWaiters()
    }

    // MARK: - Giving back

    /// A lent connection comes back; `reusable`: it may be used again (else it is closed). nil when
    /// this pool did not lend it.
    mutating func release(
        _ connection: Connection, reusable: Bool,
        now: ContinuousClock.Instant
    ) -> (lane: PostgresPoolLane, actions: [Action])? {
        guard let (entry, lane) = lent.removeValue(forKey: ObjectIdentifier(connection)) else { return nil }
        guard reusable, !isClosed else { return (lane, [closeAction(connection)] + serveWaiters()) }
        var used = entry
        used.lastUsed = now
        return (lane, place(used) + serveWaiters())
    }

    /// A connection opened for `slot` (nil: for maintenance) is ready: to that waiter if it still
    /// waits, else as any connection given back.
    mutating func opened(_ entry: Entry, for slot: OpenForWaiter?) -> [Action] {
        guard let slot else {
            maintaining -= 1
            return place(entry) + serveWaiters()
        }
        reserved[slot.lane, default: 0] -= 1
        if let index = waiters.firstIndex(where: { $0.id == slot.waiter }) {
            waiters.remove(at: index)
            lent[ObjectIdentifier(entry.connection)] = (entry, slot.lane)
            return [.resume(waiter: slot.waiter, entry)] + serveWaiters()
        }
        return place(entry) + serveWaiters()
    }

    /// Opening for `slot` (nil: for maintenance) failed: its waiter, if it still waits, fails with
    /// the error (as an acquire that opened itself does; retrying at once would spin on a database
    /// that refuses connections).
    mutating func openFailed(for slot: OpenForWaiter?) -> [Action] {
        guard let slot else {
            maintaining -= 1
            return serveWaiters()
        }
        reserved[slot.lane, default: 0] -= 1
        guard let index = waiters.firstIndex(where: { $0.id == slot.waiter }) else { return serveWaiters() }
        waiters.remove(at: index)
        return [.fail(waiter: slot.waiter)] + serveWaiters()
    }

    /// Whether every waiter whose lane has room is being served: a connection is being opened for
    /// it, one out for maintenance's check (or opened by maintenance) comes back to it (at most one
    /// waiter per such connection), or there is nothing to give (no idle connection, the pool at its
    /// maximum). Holds after every transition; the tests check it.
    var servesEveryWaiterItCan: Bool {
        unservedWaiters <= maintaining || (idle.isEmpty && openCount >= maxConnections) || isClosed
    }

    /// Waiters whose lane has room and for whom no connection is being opened.
    private var unservedWaiters: Int { waiters.count { !$0.opening && hasRoom($0.lane) } }

    /// A usable connection nobody holds: to the first waiter whose lane has room, else idle; closed
    /// when the pool is closed or would be over its maximum with it.
    private mutating func place(_ entry: Entry) -> [Action] {
        if isClosed || openCount >= maxConnections { return [closeAction(entry.connection)] }
        if let index = waiters.firstIndex(where: { hasRoom($0.lane) }) {
            let waiter = waiters.remove(at: index)
            lent[ObjectIdentifier(entry.connection)] = (entry, waiter.lane)
            return [.resume(waiter: waiter.id, entry)]
        }
        idle.append(entry)
        return []
    }

    /// Serves waiters whose lane has room (after a slot or an operator's share came free): an idle
    /// connection if there is one, else a slot to open one while below the maximum.
    private mutating func serveWaiters() -> [Action] {
        guard !isClosed else { return [] }
        var actions: [Action] = []
        while let index = waiters.firstIndex(where: { !$0.opening && hasRoom($0.lane) }) {
            let waiter = waiters[index]
            if let entry = idle.popLast() {
                waiters.remove(at: index)
                lent[ObjectIdentifier(entry.connection)] = (entry, waiter.lane)
                actions.append(.resume(waiter: waiter.id, entry))
            } else if openCount < maxConnections {
                // It stays registered (its timeout still applies, and a connection given back
                // meanwhile may reach it first); `opened` resumes it.
                waiters[index].opening = true
                reserved[waiter.lane, default: 0] += 1
                actions.append(.open(OpenForWaiter(waiter: waiter.id, lane: waiter.lane)))
            } else {
                break
            }
        }
        return actions
    }

    // MARK: - Maintenance

    /// Takes every idle connection out for a check; they stay counted (`maintaining`) until
    /// `checked` is reported for each.
    mutating func beginMaintenance() -> [Entry] {
        guard !isClosed else { return [] }
        let taken = idle
        idle.removeAll()
        maintaining += taken.count
        return taken
    }

    /// Whether a connection taken out by maintenance would leave more than `minConnections` open if
    /// closed — i.e. whether it may be closed for being idle too long.
    func isSurplus(minConnections: Int) -> Bool { openCount > minConnections }

    /// A connection taken out by maintenance was checked: `alive` ones go back (to a waiter or idle).
    mutating func checked(_ entry: Entry, alive: Bool) -> [Action] {
        maintaining -= 1
        guard alive else { return [closeAction(entry.connection)] + serveWaiters() }
        return place(entry) + serveWaiters()
    }

    /// Reserves a slot for maintenance to open a connection towards `minConnections`; false when
    /// the pool has that many (or is closed).
    mutating func reserveMaintenanceOpen(minConnections: Int) -> Bool {
        guard !isClosed, openCount < min(minConnections, maxConnections) else { return false }
        maintaining += 1
        return true
    }

    // MARK: - Closing

    /// Closes the pool: returns the idle connections to close (counted as closing until
    /// `closeFinished()`) and the waiters to fail. Connections lent or being opened or checked are
    /// closed when they come back.
    mutating func close() -> (idle: [Connection], waiters: [Int]) {
        isClosed = true
        let connections = idle.map(\.connection)
        closing += connections.count
        idle.removeAll()
        let ids = waiters.map { $0.id }
        waiters.removeAll()
        return (connections, ids)
    }
}
