import ArgumentParser
import Dispatch
import Foundation
import Synchronization
import TaskerModel
import TaskerOrchestration
import TaskerPostgres
import TaskerWorker

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
import TaskerStore
#endif

/// Submits the six example workflows round-robin at `rate` per second through
/// `orchestration_task_requests` of the configured transport (`TaskRequestSender`, as `tasker-dev
/// submit --queue` does). Every context carries a run id and a
/// sequence number, so no two requests have the same identity (md5 of named task and context).
final class ExampleSubmitter: Sendable {
    struct Statistics: Sendable {
        var submitted = 0
        var failed = 0
        var rate: Double = 0
    }

    private let sender: TaskRequestSender
    private let namespace: String
    private let rate: Double
    private let state: Mutex<Statistics>
    private let runID = String(UUID.v7().uuidString.lowercased().prefix(13))

    init(sender: TaskRequestSender, namespace: String, rate: Double) {
        self.sender = sender
        self.namespace = namespace
        self.rate = rate
        self.state = Mutex(Statistics(rate: rate))
    }

    var statistics: Statistics { state.withLock { $0 } }

    /// The request for the `sequence`-th task: workflow by round-robin, parameters pseudo-random.
    static func request(namespace: String, runID: String, sequence: Int) -> TaskRequest {
        let workflows = [
            "linear_workflow", "diamond_workflow", "tree_workflow", "decision_workflow",
            "batch_workflow", "retry_workflow",
        ]
        let name = workflows[sequence % workflows.count]
        var context: [String: JSONValue] = ["dev_run": .string(runID), "dev_seq": .int(Int64(sequence))]
        switch name {
        case "decision_workflow": context["amount"] = .int(Int64.random(in: 1...2000))
        case "batch_workflow": context["item_count"] = .int(Int64.random(in: 0...100))
        default: context["number"] = .int(Int64.random(in: 1...1000))
        }
        return TaskRequest(
            namespace: namespace, name: name, version: "1.0.0", context: .object(context),
            initiator: "scripts/dev", sourceSystem: "tasker-dev", reason: "scripts/dev example load")
    }

    func run() async {
        let period = Duration.nanoseconds(Int64(1e9 / rate))
        let clock = ContinuousClock()
        var next = clock.now
        var sequence = 0
        while !Task.isCancelled {
            let request = Self.request(namespace: namespace, runID: runID, sequence: sequence)
            sequence += 1
            do {
                try await sender.send(TaskRequestMessage(taskRequest: request))
                state.withLock { $0.submitted += 1 }
            } catch {
                state.withLock { $0.failed += 1 }
            }
            next = next.advanced(by: period)
            if next < clock.now { next = clock.now }  // do not burst after a stall
            do { try await clock.sleep(until: next) } catch { break }
        }
    }
}
