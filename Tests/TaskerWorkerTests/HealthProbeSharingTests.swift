import TaskerTestSupport
import Testing

@testable import TaskerWorker

/// Health probes share one single-flight evaluation (`HealthProbeCache`), reused while fresh enough,
/// without a worker. (A flood of probes against a running worker and its pool: `OperatorLoadTests` in
/// TaskerSystemTests.)
@Suite("Operator surface under load: shared probes", .timeLimit(.minutes(3)))
struct HealthProbeSharingTests {
    static func probes(_ message: String) -> HealthProbes {
        let check = HealthCheck(status: .healthy, message: message, durationMs: 0)
        return HealthProbes(database: check, commandProcessor: check, queueProcessing: check, status: nil)
    }

    @Test func concurrentProbesShareOneEvaluation() async {
        let evaluations = Tally()
        let cache = HealthProbeCache(maxAge: .seconds(3600))
        let gate = AsyncSemaphore(permits: 0)
        let results = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    await cache.value {
                        let n = evaluations.increment()
                        try? await gate.acquire()  // held until every caller has arrived
                        return Self.probes("evaluation \(n)")
                    }.database.message
                }
            }
            // Let the callers pile up on the running evaluation, then release it.
            while evaluations.count == 0 { await Task.yield() }
            for _ in 0..<5 { await Task.yield() }
            gate.release()
            return await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(evaluations.count == 1)
        #expect(Set(results) == ["evaluation 1"])
        // Fresh enough: reused without evaluating.
        #expect(await cache.value { Self.probes("again") }.database.message == "evaluation 1")

        let uncached = HealthProbeCache(maxAge: .zero)
        _ = await uncached.value { Self.probes("one") }
        #expect(await uncached.value { Self.probes("two") }.database.message == "two")
    }
}
