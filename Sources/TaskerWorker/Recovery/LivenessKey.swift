import Foundation

/// The advisory lock that shows a worker alive: the two-`int4` form `(classID, objectID)`, held in
/// shared mode on the worker's liveness connection for its whole life (`WorkerLivenessService`).
/// In `pg_locks` it is `locktype = 'advisory'`, `classid = classID`, `objid` = the key's 32 bits
/// (as an unsigned `oid`), `objsubid = 2`, in the worker's database.
///
/// `objectID` is the last 32 bits of the worker uuid (random bits of a UUID v7), so any session can
/// compute it from the `worker_uuid` of a step's `in_progress` transition (`LivenessSQL.objectID`).
/// Two workers may share a key (one chance in 2^32 per pair): the lock is taken in shared mode, so
/// both hold it, and the only effect is that one of them, once dead, still looks alive while the
/// other lives (its steps are then left to orchestration's staleness handling). A live worker
/// always holds its own key, so a collision never makes a live worker look dead.
package struct LivenessKey: Sendable, Equatable {
    /// The class of "Tasker worker liveness" locks (`'task'` in ASCII); no other lock of this
    /// project uses the two-int4 form (the migrator's lock is a single bigint).
    package static let classID: Int32 = 0x7461_736B

    /// The key's 32 bits, as `pg_locks.objid` shows them (unsigned).
    package let objectID: UInt32

    package init(worker uuid: UUID) {
        let bytes = uuid.uuid
        objectID = UInt32(bytes.12) << 24 | UInt32(bytes.13) << 16 | UInt32(bytes.14) << 8 | UInt32(bytes.15)
    }

    /// The second `int4` argument of `pg_advisory_lock_shared(int4, int4)` (same bits, signed).
    package var lockArgument: Int32 { Int32(bitPattern: objectID) }
}

/// SQL fragments shared by the liveness and recovery statements.
enum LivenessSQL {
    /// A `worker_uuid` this code can key (a UUID in its text form); others are never touched.
    static let uuidPattern = "'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'"

    /// The liveness key's `objid` (bigint) of the worker uuid text `uuid` (an SQL expression already
    /// checked against `uuidPattern`): its last 8 hex digits.
    static func objectID(of uuid: String) -> String {
        "('x' || right(\(uuid), 8))::bit(32)::bigint"
    }

    /// The liveness locks granted in this database: `objid` as bigint.
    static let heldLocks = """
        SELECT l.objid::bigint AS objid FROM pg_catalog.pg_locks l
                 WHERE l.locktype = 'advisory' AND l.classid = \(LivenessKey.classID)::oid AND l.objsubid = 2
                   AND l.granted
                   AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = current_database())
        """
}
