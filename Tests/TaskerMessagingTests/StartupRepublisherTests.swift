import Logging
import TaskerMessaging
import TaskerPostgres
import Testing

/// The one start-up re-publish loop of the worker and the orchestration (`StartupRepublisher`), without
/// a broker or a database: `find`, `publish` and `markPublished` are the test's own.
@Suite("Start-up re-publisher")
struct StartupRepublisherTests {
    struct LookupFailed: Error {}

    static func republisher(batchSize: Int, stopped: OneShotSignal = OneShotSignal()) -> StartupRepublisher {
        StartupRepublisher(
            what: "items", reason: "a test", batchSize: batchSize,
            backoff: ReconnectBackoff(initial: .milliseconds(1), maximum: .milliseconds(1)), stopped: stopped,
            logger: Logger(label: "test.republisher"))
    }

    /// A lookup that fails is retried until it answers; every item is published, and each batch's
    /// confirmed items are marked together, in order.
    @Test func retriesTheLookupThenPublishesAndMarksEachBatch() async {
        var lookups = 0
        var published: [Int] = []
        var marked: [[Int]] = []
        let count = await Self.republisher(batchSize: 2).run(
            find: {
                lookups += 1
                if lookups < 3 { throw LookupFailed() }
                return [1, 2, 3, 4, 5]
            },
            publish: {
                published.append($0)
                return true
            },
            markPublished: { marked.append($0) })
        #expect(count == 5)
        #expect(lookups == 3)
        #expect(published == [1, 2, 3, 4, 5])
        #expect(marked == [[1, 2], [3, 4], [5]])
    }

    /// The first item the broker does not confirm ends the run: what was confirmed of its batch is
    /// marked, nothing after it is published (the next start takes it again).
    @Test func stopsAtTheFirstUnconfirmedItem() async {
        var attempted: [Int] = []
        var marked: [[Int]] = []
        let count = await Self.republisher(batchSize: 2).run(
            find: { [1, 2, 3, 4, 5] },
            publish: { item in
                attempted.append(item)
                return item != 4
            },
            markPublished: { marked.append($0) })
        #expect(count == 3)
        #expect(attempted == [1, 2, 3, 4])
        #expect(marked == [[1, 2], [3]])
    }

    /// Nothing found: nothing published or marked.
    @Test func nothingFoundPublishesNothing() async {
        var calls = 0
        let count = await Self.republisher(batchSize: 2).run(
            find: { [Int]() },
            publish: { _ in
                calls += 1
                return true
            },
            markPublished: { _ in calls += 1 })
        #expect(count == 0)
        #expect(calls == 0)
    }

    /// The broker connection stopped while the lookup kept failing: the run ends (no retry forever)
    /// without publishing anything.
    @Test func aStoppedConnectionEndsTheLookupRetries() async {
        let stopped = OneShotSignal()
        var lookups = 0
        var published = 0
        let count = await Self.republisher(batchSize: 2, stopped: stopped).run(
            find: { () async throws -> [Int] in
                lookups += 1
                if lookups == 4 { stopped.trigger() }
                throw LookupFailed()
            },
            publish: { _ in
                published += 1
                return true
            })
        #expect(count == 0)
        #expect(lookups == 4)
        #expect(published == 0)
    }
}
