import Foundation
import Testing

@testable import TaskerPostgres
@testable import TaskerWorker

/// The pool's bookkeeping (`PostgresPoolState`) without I/O: every interleaving the actor's awaits
/// allow is a sequence of these synchronous transitions, so the ceiling is checked on them directly.
@Suite("Connection pool state machine")
struct PostgresPoolStateTests {
    final class FakeConnection: Sendable {}
    typealias State = PostgresPoolState<FakeConnection>

    static func entry() -> State.Entry {
        State.Entry(connection: FakeConnection(), openedAt: .now, lastUsed: .now)
    }

    /// Fills the pool with `count` idle connections (opened by acquires, then released).
    static func filled(_ state: inout State, _ count: Int) {
        var lent: [FakeConnection] = []
        for id in 0..<count {
            guard case .open = state.acquire(.pipeline, waiterID: id) else {
                Issue.record("expected an open")
                return
            }
            let opened = entry()
            state.lend(opened, to: .pipeline)
            lent.append(opened.connection)
        }
        for connection in lent { _ = state.release(connection, reusable: true, now: .now) }
    }

    @Test func connectionsTakenOutByMaintenanceStayCountedSoAcquiresWaitInsteadOfOpening() {
        var state = State(maxConnections: 3, operatorBudget: 1)
        Self.filled(&state, 3)
        #expect(state.idle.count == 3 && state.openCount == 3)

        let checking = state.beginMaintenance()
        #expect(checking.count == 3)
        #expect(state.openCount == 3)
        // Concurrent acquires while maintenance awaits its checks: nothing idle, but the pool is full.
        guard case .wait(let first) = state.acquire(.pipeline, waiterID: 100) else {
            Issue.record("an acquire during maintenance opened a connection beyond the maximum")
            return
        }
        guard case .wait(let second) = state.acquire(.pipeline, waiterID: 101) else {
            Issue.record("an acquire during maintenance opened a connection beyond the maximum")
            return
        }
        // The first checked connection goes straight to the first waiter; a dead one makes room
        // for the second to get a new connection.
        let resumed = state.checked(checking[0], alive: true)
        guard case .resume(let waiter, _)? = resumed.first else {
            Issue.record("\(resumed)")
            return
        }
        #expect(waiter == first)
        #expect(state.openCount == 3)
        let dead = state.checked(checking[1], alive: false)
        guard dead.count == 1, case .close? = dead.first else {
            Issue.record("a replacement was opened before the dead connection was closed: \(dead)")
            return
        }
        #expect(state.openCount == 3)
        let replaced = state.closeFinished()
        guard case .open(let slot)? = replaced.last else {
            Issue.record("\(replaced)")
            return
        }
        #expect(slot.waiter == second)
        #expect(state.openCount == 3)
        // A connection coming back while that one is being opened goes to the waiter at once; the
        // one opened for it then stays idle (still within the maximum).
        let back = state.checked(checking[2], alive: true)
        guard case .resume(let waiting, _)? = back.first else {
            Issue.record("\(back)")
            return
        }
        #expect(waiting == second)
        #expect(state.opened(Self.entry(), for: slot).isEmpty)
        #expect(state.idle.count == 1)
        #expect(state.openCount == 3 && state.waiters.isEmpty)
    }

    @Test func theOperatorLaneWaitsAtItsBudgetWhileThePipelineStillGetsConnections() {
        var state = State(maxConnections: 4, operatorBudget: 2)
        var operatorConnections: [FakeConnection] = []
        for id in 0..<2 {
            guard case .open = state.acquire(.operator, waiterID: id) else {
                Issue.record("expected an open")
                return
            }
            let opened = Self.entry()
            state.lend(opened, to: .operator)
            operatorConnections.append(opened.connection)
        }
        guard case .wait(let probe) = state.acquire(.operator, waiterID: 10) else {
            Issue.record("the operator lane went over its budget")
            return
        }
        // The pipeline is not behind the waiting probe.
        guard case .open = state.acquire(.pipeline, waiterID: 11) else {
            Issue.record("the pipeline was starved")
            return
        }
        state.lend(Self.entry(), to: .pipeline)
        #expect(state.held(by: .operator) == 2)

        // A probe's connection coming back goes to the waiting probe.
        let released = state.release(operatorConnections[0], reusable: true, now: .now)
        guard case .resume(let waiter, _)? = released?.actions.first else {
            Issue.record("\(String(describing: released))")
            return
        }
        #expect(waiter == probe)
        #expect(state.held(by: .operator) == 2)
    }

    /// An idle worker's background loops (lease, scan, poll) take turns on one connection: a second
    /// background acquire waits for the first's connection, even with an idle one in the pool, and
    /// never makes the pool open another; the pipeline is not behind it.
    @Test func theBackgroundLaneHoldsOneConnectionAtATime() {
        var state = State(maxConnections: 4, operatorBudget: 1)
        guard case .open = state.acquire(.background, waiterID: 1) else {
            Issue.record("expected an open")
            return
        }
        let first = Self.entry()
        state.lend(first, to: .background)
        guard case .wait(let second) = state.acquire(.background, waiterID: 2) else {
            Issue.record("the background lane took a second connection")
            return
        }
        #expect(state.openCount == 1)
        guard case .open = state.acquire(.pipeline, waiterID: 3) else {
            Issue.record("the pipeline waited behind the background lane")
            return
        }
        state.lend(Self.entry(), to: .pipeline)
        #expect(state.held(by: .background) == 1)
        // The first one's connection goes to the waiting background caller.
        let released = state.release(first.connection, reusable: true, now: .now)
        guard case .resume(let waiter, _)? = released?.actions.first else {
            Issue.record("\(String(describing: released))")
            return
        }
        #expect(waiter == second)
        #expect(state.openCount == 2 && state.held(by: .background) == 1)
    }

    /// An acquire that falls on maintenance's check of the idle connections waits for the checked
    /// one instead of opening another (one waiter per connection out for the check); a second
    /// acquire then opens, and a connection found dead makes room for a waiter.
    @Test func anAcquireDuringMaintenanceWaitsForTheCheckedConnection() {
        var state = State(maxConnections: 4, operatorBudget: 1)
        Self.filled(&state, 1)
        let checking = state.beginMaintenance()
        guard case .wait(let waiter) = state.acquire(.background, waiterID: 1) else {
            Issue.record("an acquire during the check opened a second connection")
            return
        }
        guard case .open = state.acquire(.pipeline, waiterID: 2) else {
            Issue.record("a second acquire waited for a connection already promised to the first")
            return
        }
        state.lend(Self.entry(), to: .pipeline)
        let back = state.checked(checking[0], alive: true)
        guard case .resume(let resumed, _)? = back.first else {
            Issue.record("\(back)")
            return
        }
        #expect(resumed == waiter)
        #expect(state.openCount == 2)
    }

    @Test func theOperatorBudgetLeavesThePipelineAtLeastOneConnection() {
        #expect(State(maxConnections: 2, operatorBudget: 5).operatorBudget == 1)
        #expect(State(maxConnections: 1, operatorBudget: 5).operatorBudget == 1)
        #expect(State(maxConnections: 30, operatorBudget: 2).operatorBudget == 2)
        #expect(PostgresPoolConfiguration(url: "", maxConnections: 3, operatorMaxConnections: 9).operatorMaxConnections == 2)
    }

    @Test func closingFailsWaitersAndClosesConnectionsAsTheyComeBack() {
        var state = State(maxConnections: 1, operatorBudget: 1)
        guard case .open = state.acquire(.pipeline, waiterID: 0) else {
            Issue.record("expected an open")
            return
        }
        let lent = Self.entry()
        state.lend(lent, to: .pipeline)
        guard case .wait = state.acquire(.pipeline, waiterID: 1) else {
            Issue.record("expected a wait")
            return
        }
        let (idle, waiters) = state.close()
        #expect(idle.isEmpty && waiters == [1])
        let back = state.release(lent.connection, reusable: true, now: .now)
        guard case .close? = back?.actions.first else {
            Issue.record("\(String(describing: back))")
            return
        }
        #expect(state.openCount == 1)  // until its close finished
        #expect(state.closeFinished().isEmpty)
        #expect(state.openCount == 0)
        guard case .closed = state.acquire(.pipeline, waiterID: 2) else {
            Issue.record("acquired from a closed pool")
            return
        }
    }

    /// A connection being closed still counts: at the maximum, a broken connection given back (or a
    /// dead candidate, or one closed by maintenance) makes a waiter wait until its close finished;
    /// only then is the replacement opened.
    @Test func aConnectionBeingClosedCountsUntilItsCloseFinished() {
        var state = State(maxConnections: 2, operatorBudget: 1)
        var lent: [FakeConnection] = []
        for id in 0..<2 {
            guard case .open = state.acquire(.pipeline, waiterID: id) else {
                Issue.record("expected an open")
                return
            }
            let opened = Self.entry()
            state.lend(opened, to: .pipeline)
            lent.append(opened.connection)
        }
        guard case .wait(let waiter) = state.acquire(.pipeline, waiterID: 10) else {
            Issue.record("expected a wait")
            return
        }
        // Broken on release: closed, still counted; the waiter keeps waiting.
        let broken = state.release(lent[0], reusable: false, now: .now)
        guard let actions = broken?.actions, actions.count == 1, case .close? = actions.first else {
            Issue.record("a replacement was opened while the broken connection was being closed: \(String(describing: broken))")
            return
        }
        #expect(state.openCount == 2 && state.closing == 1)
        // Only when the close finished does the waiter get a slot to open a connection.
        guard case .open(let slot)? = state.closeFinished().first else {
            Issue.record("expected an open for the waiter")
            return
        }
        #expect(slot.waiter == waiter)
        #expect(state.openCount == 2 && state.closing == 0)
        _ = state.opened(Self.entry(), for: slot)
        // A dead candidate: the same.
        _ = state.release(lent[1], reusable: true, now: .now)
        guard case .candidate(let candidate) = state.acquire(.pipeline, waiterID: 11) else {
            Issue.record("expected a candidate")
            return
        }
        guard case .wait = state.acquire(.pipeline, waiterID: 12) else {
            Issue.record("expected a wait")
            return
        }
        let discarded = state.discardReserved(candidate.connection, .pipeline)
        #expect(discarded.count == 1)
        #expect(state.openCount == 2)
        guard case .open? = state.closeFinished().first else {
            Issue.record("expected an open after the close")
            return
        }
    }

    /// Random interleavings of every transition (acquires on both lanes, checks, opens that succeed
    /// or fail, releases of broken or good connections, maintenance, waiter timeouts): the pool never
    /// counts more than its maximum, the operator lane never more than its budget, and the count
    /// always equals the connections that really exist.
    @Test(arguments: [1, 2, 3, 7, 42])
    func noInterleavingExceedsTheMaximum(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let max = 5
        var state = State(maxConnections: max, operatorBudget: 2)
        var lent: [(FakeConnection, PostgresPoolLane)] = []
        var candidates: [(State.Entry, PostgresPoolLane)] = []
        var acquireOpens: [PostgresPoolLane] = []
        var slotOpens: [State.OpenForWaiter] = []
        var maintenanceChecks: [State.Entry] = []
        var maintenanceOpens = 0
        var waiting: [Int: PostgresPoolLane] = [:]
        var closing = 0
        var nextID = 0

        func perform(_ actions: [State.Action]) {
            for action in actions {
                switch action {
                case .resume(let waiter, let entry):
                    guard let lane = waiting.removeValue(forKey: waiter) else {
                        Issue.record("resumed waiter \(waiter), who was not waiting")
                        continue
                    }
                    lent.append((entry.connection, lane))
                case .open(let slot): slotOpens.append(slot)
                case .close: closing += 1
                case .fail(let waiter):
                    if waiting.removeValue(forKey: waiter) == nil { Issue.record("failed waiter \(waiter), who was not waiting") }
                }
            }
        }

        for _ in 0..<4000 {
            switch random.next() % 11 {
            case 0, 1:
                let lane: PostgresPoolLane = random.next() % 3 == 0 ? .operator : .pipeline
                nextID += 1
                switch state.acquire(lane, waiterID: nextID) {
                case .candidate(let entry): candidates.append((entry, lane))
                case .open: acquireOpens.append(lane)
                case .wait(let id): waiting[id] = lane
                case .closed: Issue.record("closed")
                }
            case 2 where !candidates.isEmpty:
                let (entry, lane) = candidates.removeFirst()
                if random.next() % 4 == 0 {
                    perform(state.discardReserved(entry.connection, lane))
                } else {
                    state.lend(entry, to: lane)
                    lent.append((entry.connection, lane))
                }
            case 3 where !acquireOpens.isEmpty:
                let lane = acquireOpens.removeFirst()
                if random.next() % 4 == 0 {
                    perform(state.dropReserved(lane))
                } else {
                    let entry = Self.entry()
                    state.lend(entry, to: lane)
                    lent.append((entry.connection, lane))
                }
            case 4 where !lent.isEmpty:
                let (connection, _) = lent.remove(at: Int(random.next() % UInt64(lent.count)))
                guard let released = state.release(connection, reusable: random.next() % 5 != 0, now: .now) else {
                    Issue.record("a lent connection was unknown")
                    continue
                }
                perform(released.actions)
            case 5:
                maintenanceChecks += state.beginMaintenance()
                if state.reserveMaintenanceOpen(minConnections: 3) { maintenanceOpens += 1 }
            case 6 where !maintenanceChecks.isEmpty:
                perform(state.checked(maintenanceChecks.removeFirst(), alive: random.next() % 4 != 0))
            case 7 where !slotOpens.isEmpty:
                let slot = slotOpens.removeFirst()
                perform(random.next() % 4 == 0 ? state.openFailed(for: slot) : state.opened(Self.entry(), for: slot))
            case 8 where maintenanceOpens > 0:
                maintenanceOpens -= 1
                perform(random.next() % 4 == 0 ? state.openFailed(for: nil) : state.opened(Self.entry(), for: nil))
            case 9 where !waiting.isEmpty:
                let id = waiting.keys.sorted()[Int(random.next() % UInt64(waiting.count))]
                if let actions = state.removeWaiter(id) {
                    waiting[id] = nil
                    perform(actions)
                }
            case 10 where closing > 0:
                closing -= 1
                perform(state.closeFinished())
            default:
                break
            }
            #expect(state.openCount <= max)
            #expect(state.held(by: .operator) <= 2)
            let existing =
                lent.count + candidates.count + acquireOpens.count + slotOpens.count
                + maintenanceChecks.count + maintenanceOpens + state.idle.count + closing
            #expect(state.openCount == existing)
            #expect(state.lent.count == lent.count)
            // Liveness: no waiter is left waiting while there is a connection or a slot for it.
            #expect(state.servesEveryWaiterItCan, "a waiter waits with room: \(state.waiters), open \(state.openCount)")
            // A waiter marked as being opened for has an open really under way.
            let openedFor = state.waiters.filter(\.opening).allSatisfy { waiter in slotOpens.contains { $0.waiter == waiter.id } }
            #expect(openedFor, "a waiter waits for an open that is no longer under way: \(state.waiters)")
            if state.openCount > max || state.openCount != existing || !state.servesEveryWaiterItCan || !openedFor { return }
        }
    }
}

/// A small deterministic generator (SplitMix64), so that a failing interleaving can be replayed.
struct SeededRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E49B
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
