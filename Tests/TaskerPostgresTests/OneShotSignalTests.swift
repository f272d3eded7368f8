import Testing

@testable import TaskerPostgres

/// `OneShotSignal.sleep(for:)` and `unlessTriggered`: the one "pause unless stopped" of the retry
/// loops (the broker consumer's backoff, the publish and re-publish retries) ends at the signal or
/// at cancellation, not at the end of its delay.
@Suite("OneShotSignal pauses", .timeLimit(.minutes(1)))
struct OneShotSignalTests {
    @Test func aSleepEndsWhenTheSignalIsTriggeredAndSaysToStop() async {
        let signal = OneShotSignal()
        let sleeper = Task { await signal.sleep(for: .seconds(3600)) }
        try? await Task.sleep(for: .milliseconds(20))
        signal.trigger()
        #expect(await sleeper.value == false)
        // Already triggered: no wait at all.
        #expect(await signal.sleep(for: .seconds(3600)) == false)
    }

    @Test func aSleepEndsWhenItsTaskIsCancelled() async {
        let signal = OneShotSignal()
        let sleeper = Task { await signal.sleep(for: .seconds(3600)) }
        sleeper.cancel()
        #expect(await sleeper.value == false)
        #expect(!signal.isTriggered)
    }

    @Test func aSleepThatRunsItsCourseSaysToGoOn() async {
        #expect(await OneShotSignal().sleep(for: .milliseconds(5)) == true)
    }

    @Test func unlessTriggeredGivesTheBodysValueOrNilAtTheSignal() async {
        let signal = OneShotSignal()
        #expect(await signal.unlessTriggered { 42 } == 42)
        let waiting = Task {
            await signal.unlessTriggered { () async -> Int in
                try? await Task.sleep(for: .seconds(3600))
                return Task.isCancelled ? -1 : 1
            }
        }
        try? await Task.sleep(for: .milliseconds(20))
        signal.trigger()
        #expect(await waiting.value == nil)
        #expect(await signal.unlessTriggered { 42 } == nil)
    }
}
