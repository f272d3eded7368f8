import Foundation
import Logging
import Synchronization
import TaskerAuth
import TaskerHTTP
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

extension StepExecutor {
    /// Processes the messages of one poll read. Each is decoded, de-duplicated and checked against
    /// load shedding as in `execute(_:)`; those accepted are hydrated and claimed together in ONE
    /// round trip and ONE transaction (`StepRepository.hydrateAndClaim(_:_:)`), so a poll of k
    /// messages costs one commit instead of k. If the batch fails (a lock timeout, a deadlock, a lost
    /// connection), nothing of it was committed and each message is claimed on its own instead.
    /// Outcomes come in `deliveries` order. Never throws.
    package func execute(batch deliveries: [StepDelivery]) async -> [DeliveryOutcome] {
        var outcomes = [DeliveryOutcome](repeating: .notAccepting, count: deliveries.count)
        guard accepting, !intakeIsClosed else { return outcomes }
        var accepted: [(index: Int, delivery: StepDelivery, message: StepMessage)] = []
        for (index, delivery) in deliveries.enumerated() {
            guard serves(delivery) else {
                outcomes[index] = .handled
                continue
            }
            // Each message on its own: one that does not decode never holds back the others.
            let message: StepMessage
            do {
                if let bodyError = delivery.bodyError { throw StepMessageBodyError(reason: bodyError) }
                message = try delivery.message.decode(StepMessage.self)
            } catch {
                await archivePoison(delivery, reason: "undecodable step message: \(error)")
                outcomes[index] = .handled
                continue
            }
            if let refused = await admit(message, delivery) {
                outcomes[index] = refused
                continue
            }
            accepted.append((index, delivery, message))
        }
        defer { for item in accepted { capacity.claimEnded(step: item.message.stepUUID) } }
        // Shutdown may have begun during the awaits above (poison archiving, shedding): nothing
        // accepted is claimed then; the messages wait out their visibility timeout.
        guard !intakeIsClosed else { return outcomes }
        guard accepted.count > 1 else {
            for item in accepted { outcomes[item.index] = await claimOne(item.delivery, item.message) }
            return outcomes
        }
        // Step order: two batches that share steps lock them in the same order.
        accepted.sort { $0.message.stepUUID.uuidString < $1.message.stepUUID.uuidString }
        let claimStart = ContinuousClock.now
        let requests = accepted.map { request($0.message, $0.delivery) }
        let attempts: [ClaimAttempt]
        do {
            attempts = try await claimSteps(requests)
        } catch {
            logger.info(
                "claiming \(accepted.count) polled steps in one transaction failed; claiming them one by one",
                metadata: ["error": "\(error)"])
            // Concurrently, as separate deliveries: a step whose lock is held elsewhere (the usual
            // cause) waits out its claim timeout without holding back the others.
            let single = accepted
            await withTaskGroup(of: (Int, DeliveryOutcome).self) { group in
                for item in single {
                    group.addTask { (item.index, await self.claimOne(item.delivery, item.message)) }
                }
                for await (index, outcome) in group { outcomes[index] = outcome }
            }
            return outcomes
        }
        StepMetrics.claimsBatched(accepted.count, in: statistics)
        for (item, attempt) in zip(accepted, attempts) {
            do {
                outcomes[item.index] = try await settle(item.delivery, item.message, attempt, since: claimStart)
            } catch {
                outcomes[item.index] = claimFailed(item.delivery, item.message, error)
            }
        }
        // The claims committed: their messages can go now, together (a no-op where the claim archived them).
        let claimed = zip(accepted, attempts).filter { if case .claimed = $0.1.claim { true } else { false } }.map(\.0.delivery)
        if !claimed.isEmpty { await transport.settleClaimed(claimed) }
        return outcomes
    }

    /// Hydrates and claims `requests` in one round trip and one transaction
    /// (`StepRepository.hydrateAndClaim`); results in `requests` order.
    ///
    /// When the connection breaks so that the outcome is unknown (the `COMMIT` may have run), the
    /// database is asked (`StepRepository.findClaims`, until it answers): claims that committed
    /// are returned as made, so their steps run instead of staying `in_progress` with nobody to
    /// run them (their messages are archived); if none did, the error is thrown and the messages
    /// stay queued as after any failed claim.
    func claimSteps(_ requests: [ClaimRequest]) async throws -> [ClaimAttempt] {
        let stamp = ClaimStamp(worker: identity.uuid)
        do {
            let queues = queueStatements.statements
            return try await pool.withConnection { [claimTimeout] c in
                try await StepRepository.hydrateAndClaim(c, requests, timeout: claimTimeout, stamp: stamp, queues: queues)
            }
        } catch let error as PostgresError where error.leavesOutcomeUnknown {
            let session = error.backendPID
            let steps = requests.map(\.stepUUID.uuidString).joined(separator: ",")
            guard
                let found = await pool.askUntilAnswered(
                    "whether a claim whose answer was lost committed", backoff: Self.recoveryBackoff, logger: logger,
                    { c throws(PostgresError) in try StepRepository.findClaims(c, requests, stamp: stamp, session: session) })
            else {
                logger.error(
                    "stopped before learning whether a claim committed; if it did, its steps stay in_progress",
                    metadata: ["step_uuids": "\(steps)", "error": "\(error)"])
                throw error
            }
            let recovered = found.filter { $0.claim != .notClaimable }.count
            // Behind a transaction pooler the lookup could not fence the broken session: a claim
            // not found yet may still commit, so it is looked up again later (`OrphanedClaimAudit`).
            unresolvedClaims?.remember(
                zip(requests, found).filter { $0.1.claim == .notClaimable }.map(\.0.stepUUID), stamp: stamp)
            guard recovered > 0 else { throw error }
            StepMetrics.claimsRecovered(recovered, in: statistics)
            logger.warning(
                "the connection broke after a claim committed; its steps run",
                metadata: ["step_uuids": "\(steps)", "claimed": "\(recovered)", "error": "\(error)"])
            return found
        }
    }

    /// Between attempts to learn what a claim whose answer was lost did.
    static let recoveryBackoff = ReconnectBackoff(initial: .milliseconds(50), maximum: .seconds(5))

    func request(_ message: StepMessage, _ delivery: StepDelivery) -> ClaimRequest {
        ClaimRequest(
            taskUUID: message.taskUUID, stepUUID: message.stepUUID, queue: delivery.queue, msgID: delivery.msgID,
            withRows: eventDocuments)
    }

    /// `claimAndDispatch` for one accepted message (its in-flight entry is the caller's).
    private func claimOne(_ delivery: StepDelivery, _ message: StepMessage) async -> DeliveryOutcome {
        guard !intakeIsClosed else { return .notAccepting }
        do {
            return try await claimAndDispatch(delivery, message)
        } catch {
            return claimFailed(delivery, message, error)
        }
    }

    /// Whether `delivery` comes from one of this worker's queues; if not, it is refused (counted,
    /// logged at most every 10 s) and nothing of it is read, claimed or archived.
    func serves(_ delivery: StepDelivery) -> Bool {
        guard !servedQueues.contains(delivery.queue) else { return true }
        StepMetrics.deliveryRefused(in: statistics)
        if refusedLog.allow() {
            logger.warning(
                "refused a delivery from a queue this worker does not serve (repeats are logged at most every 10 s)",
                metadata: ["queue": "\(delivery.queue.prefix(100))", "msg_id": "\(delivery.msgID)"])
        }
        return false
    }

    /// A claim that failed on the database: logged and counted; the message stays queued.
    func claimFailed(_ delivery: StepDelivery, _ message: StepMessage, _ error: any Error) -> DeliveryOutcome {
        StepMetrics.failure(queue: delivery.queue, .databaseError, in: statistics)
        logger.warning(
            "could not claim step; the message stays queued and is read again",
            metadata: Self.metadata(message, ["error": "\(error)", "msg_id": "\(delivery.msgID)"]))
        return .retryLater
    }
}

/// A queue message whose body could not be read (`QueueMessage.bodyError`).
struct StepMessageBodyError: Error, CustomStringConvertible {
    let reason: String
    var description: String { "the message body could not be decoded: \(reason)" }
}
