import Logging
import TaskerPostgres

/// The start-up re-publish of the worker and the orchestration on RabbitMQ: the one loop that
/// announces again what a process committed but may have died before the broker confirmed.
///
/// On RabbitMQ a message is published after its transaction commits (a result for orchestration, a
/// step message for a worker), so a crash between the commit and the confirm leaves work committed
/// and unannounced. At every start, each side looks for what it committed before this process
/// started (`find`, retried with backoff until it answers or the broker connection stopped), and
/// publishes each item until the broker confirms it (`publish`). A duplicate of a message that was
/// in fact published is harmless on both sides: orchestration processes a result only for a step
/// still waiting for it, and a worker's claim is a compare-and-set on `enqueued`.
///
/// Items are published in batches of `batchSize`; after each batch, `markPublished` records the
/// confirmed ones (one attempt; when it fails the next start publishes them once more) so that a
/// crash-looping process does not publish the same items at every start. The first item the
/// publisher cannot confirm (the connection stopped) ends the run: the next start takes it again.
package struct StartupRepublisher: Sendable {
    /// What is re-published, for log lines ("results", "step messages").
    package var what: String
    /// Why there may be anything to re-publish, for the log line when there is.
    package var reason: String
    /// Items published before `markPublished` records them.
    package var batchSize: Int
    /// The delays between attempts of `find`.
    package var backoff: ReconnectBackoff
    /// The broker connection's end: the retries of `find` stop at it.
    package var stopped: OneShotSignal
    package var logger: Logger

    package init(
        what: String, reason: String, batchSize: Int = 100,
        backoff: ReconnectBackoff = ReconnectBackoff(initial: .milliseconds(200), maximum: .seconds(5)),
        stopped: OneShotSignal, logger: Logger
    ) {
        self.what = what
        self.reason = reason
        self.batchSize = max(1, batchSize)
        self.backoff = backoff
        self.stopped = stopped
        self.logger = logger
    }

    /// Finds the unannounced items, publishes them in batches and marks each batch's confirmed
    /// ones; returns how many the broker confirmed (0 when stopped or cancelled before `find`
    /// answered).
    @discardableResult
    package func run<Item: Sendable>(
        find: () async throws -> [Item],
        publish: (Item) async -> Bool,
        markPublished: ([Item]) async -> Void = { _ in }
    ) async -> Int {
        guard let found = await findRetrying(find), !found.isEmpty else { return 0 }
        logger.warning("re-publishing \(what) (\(reason))", metadata: ["count": "\(found.count)"])
        var published = 0
        for start in stride(from: 0, to: found.count, by: batchSize) {
            let batch = found[start..<min(start + batchSize, found.count)]
            var confirmed: [Item] = []
            for item in batch {
                guard await publish(item) else { break }
                confirmed.append(item)
            }
            published += confirmed.count
            if !confirmed.isEmpty { await markPublished(confirmed) }
            guard confirmed.count == batch.count else {
                logger.warning(
                    "stopped before every \(what) was re-published; the next start takes the rest",
                    metadata: ["published": "\(published)", "left": "\(found.count - published)"])
                break
            }
        }
        return published
    }

    /// `find`'s answer, retried with `backoff` (the first failure logged); nil when the connection
    /// stopped or the task was cancelled first.
    private func findRetrying<Item: Sendable>(_ find: () async throws -> [Item]) async -> [Item]? {
        var attempts = RetryAttempts(backoff: backoff)
        while !Task.isCancelled, !stopped.isTriggered {
            do {
                return try await find()
            } catch {
                let delay = attempts.failed()
                if attempts.failures == 1 {
                    logger.warning("could not look for \(what) to re-publish; retrying", metadata: ["error": "\(error)"])
                }
                guard await stopped.sleep(for: delay) else { return nil }
            }
        }
        return nil
    }
}
