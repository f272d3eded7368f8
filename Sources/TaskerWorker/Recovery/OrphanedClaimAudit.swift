import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres

/// Claims whose answer was lost and that the lookup found not committed, behind a transaction
/// pooler (`PostgresRoute.transactionPooler`), where the broken session cannot be fenced
/// (`StepRepository+Recovery`): the transaction may still be queued in the pooler or running in a
/// shared server session, and commit after the lookup. Its step would then stay `in_progress` under
/// this live worker with nobody running it (crash recovery leaves a live worker's steps alone). So
/// each such claim is remembered here and looked up again (`OrphanedClaimAudit`) until `horizon`
/// has passed, after which it can no longer commit (the claim's own statement timeout plus the
/// pooler's queueing, see `OrphanedClaimAudit.horizon`).
///
/// Bounded: at most `capacity` steps are remembered; past it the oldest entries are forgotten and
/// logged (their steps, if ever claimed late, wait for this worker's lease to end or for the
/// orchestration's staleness handling).
final class UnresolvedClaims: Sendable {
    struct Entry: Sendable, Equatable {
        var steps: [UUID]
        var stamp: ClaimStamp
        var since: ContinuousClock.Instant
    }

    static let capacity = 10_000
    /// The entries and the number of steps they hold.
    private let entries = Mutex<(list: [Entry], steps: Int)>(([], 0))
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    /// Remembers the steps of a claim with `stamp` whose outcome the lookup took for "not committed".
    func remember(_ steps: [UUID], stamp: ClaimStamp, at now: ContinuousClock.Instant = .now) {
        guard !steps.isEmpty else { return }
        let forgotten: [Entry] = entries.withLock { entries in
            entries.list.append(Entry(steps: steps, stamp: stamp, since: now))
            entries.steps += steps.count
            var dropped: [Entry] = []
            while entries.steps > Self.capacity, entries.list.count > 1 {
                let oldest = entries.list.removeFirst()
                entries.steps -= oldest.steps.count
                dropped.append(oldest)
            }
            return dropped
        }
        for entry in forgotten {
            logger.error(
                "too many claims with a lost answer to keep checking; forgetting the oldest",
                metadata: ["step_uuids": "\(entry.steps.map { $0.uuidString }.joined(separator: ","))"])
        }
    }

    /// The entries now; those remembered before `expiredBefore` are removed (returned no more).
    func take(expiredBefore: ContinuousClock.Instant) -> [Entry] {
        entries.withLock { entries in
            entries.list.removeAll { $0.since < expiredBefore }
            entries.steps = entries.list.reduce(0) { $0 + $1.steps.count }
            return entries.list
        }
    }

    /// Forgets the steps of `stamp` in `steps` (resolved: found claimed and retired, or moved on).
    func resolve(_ steps: Set<UUID>, stamp: ClaimStamp) {
        entries.withLock { entries in
            for index in entries.list.indices where entries.list[index].stamp == stamp {
                entries.list[index].steps.removeAll(where: steps.contains)
            }
            entries.list.removeAll { $0.steps.isEmpty }
            entries.steps = entries.list.reduce(0) { $0 + $1.steps.count }
        }
    }

    var count: Int { entries.withLock { $0.steps } }
}

/// Looks up the `UnresolvedClaims` every `interval` (a `Service`, run only behind a transaction
/// pooler): a step whose current transition is the claim with that stamp was claimed by this
/// worker after all, and nobody runs it, so it gets a retryable error result
/// (`StepExecutor.failClaimedStep`, over this worker's own claim) and orchestration retries it.
/// A step no longer `in_progress` under that claim needs nothing.
final class OrphanedClaimAudit: Service, Sendable {
    let executor: StepExecutor
    let claims: UnresolvedClaims
    let interval: Duration
    /// How long a claim may still commit after its answer was lost: its statement timeout
    /// (`claim_timeout_seconds`) plus 10 minutes for the pooler's queue (PgBouncer's
    /// `query_wait_timeout` is 2 minutes by default).
    let horizon: Duration

    init(executor: StepExecutor, claims: UnresolvedClaims, interval: Duration, claimTimeout: Duration) {
        self.executor = executor
        self.claims = claims
        self.interval = interval
        self.horizon = claimTimeout + .seconds(600)
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do { try await Task.sleep(for: self.interval) } catch { return }
                await self.auditOnce()
            }
        }
    }

    /// One pass over the remembered claims: all of them looked up in ONE statement (at most
    /// `UnresolvedClaims.capacity` steps), then the late commits retired. Returns how many steps it
    /// retired.
    @discardableResult
    func auditOnce(now: ContinuousClock.Instant = .now) async -> Int {
        let pending = claims.take(expiredBefore: now - horizon).flatMap { entry in entry.steps.map { ($0, entry.stamp) } }
        guard !pending.isEmpty, !Task.isCancelled else { return 0 }
        let found: [(message: StepMessage, stamp: ClaimStamp)]
        do {
            let claimed = try await executor.pool.withConnection(lane: .background) { c in
                try await StepRepository.orphanedClaims(c, pending.map { ($0.0, $0.1.metadata) })
            }
            found = claimed.map { (message: $0.message, stamp: pending[$0.index].1) }
        } catch {
            return 0  // asked again at the next pass
        }
        for claim in found {
            await executor.failClaimedStep(
                claim.message,
                reason: "the answer of this worker's claim was lost behind the transaction pooler and the claim "
                    + "committed after the worker had looked it up; the step is retried")
            StepMetrics.orphanedClaimRetired(in: executor.statistics)
            claims.resolve([claim.message.stepUUID], stamp: claim.stamp)
        }
        return found.count
    }
}

extension StepRepository {
    /// Of `claims` (a step and the metadata of one of this worker's claims), those whose step's
    /// current transition is `in_progress` with exactly that metadata (a claim of this worker that
    /// committed after its lookup): their index in `claims` and their step message. One round trip.
    static func orphanedClaims(
        _ c: isolated PostgresConnection, _ claims: [(step: UUID, metadata: String)]
    ) throws(PostgresError) -> [(index: Int, message: StepMessage)] {
        guard !claims.isEmpty else { return [] }
        let parameters: [any PostgresEncodable] = [
            PostgresArrayLiteral(claims.map(\.step)), PostgresArrayLiteral(claims.map { Optional($0.metadata) }),
        ]
        return try c.query(Recovery.orphanedClaims, parameters).map { row throws(PostgresError) in
            let index = try row.decode("n", as: Int.self) - 1
            return (
                index,
                StepMessage(
                    taskUUID: try row.decode("task_uuid"), stepUUID: try row.decode("step_uuid"),
                    correlationID: try row.decode("correlation_id"))
            )
        }
    }
}

extension StepRepository.Recovery {
    /// Of the pairs ($1[i] step, $2[i] claim metadata), those whose step's current transition is
    /// `in_progress` with that metadata: the pair's position `n` (from 1), the step, its task and
    /// correlation id.
    static let orphanedClaims = PreparedStatement(
        """
        SELECT c.n, wst.workflow_step_uuid AS step_uuid, ws.task_uuid, t.correlation_id
          FROM unnest($1::uuid[], $2::jsonb[]) WITH ORDINALITY AS c(step_uuid, metadata, n)
          JOIN tasker.workflow_step_transitions wst
            ON wst.workflow_step_uuid = c.step_uuid AND wst.most_recent AND wst.to_state = 'in_progress'
           AND wst.metadata = c.metadata
          JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
          JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
        """)
}
