import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// A worker started with a low soft open-file limit (as containers often are: 1,024 under a much
/// higher hard limit) raises it to the hard limit at boot, and warns when even that is below what
/// its connection limits allow (issue #11, item 5).
@Suite("Open-file limit", .timeLimit(.minutes(2)))
struct FileDescriptorLimitTests {
    @Test func theWorkerRaisesALowSoftLimitToTheHardLimit() async throws {
        var limit = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let hard = Int(clamping: limit.rlim_max)
        try await withTestDatabase { db in
            let worker = try WorkerProcess(
                ["run"], db: db, templatePath: TestEnvironment.repositoryRoot + "/config/tasks/diagnostics",
                softFileLimit: 256)
            defer { worker.kill() }
            #expect(try await worker.restAddress() != nil, "the worker did not start:\n\(worker.log)")
            let limits = try String(contentsOfFile: "/proc/\(worker.process.processIdentifier)/limits", encoding: .utf8)
            let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // "Max open files  <soft>  <hard>  files"
            let soft = fields.count >= 5 ? (fields[3] == "unlimited" ? Int.max : Int(fields[3])) : nil
            #expect(soft == hard, "\(line)")
            let needed = FileDescriptorLimit.needed(by: TaskerConfiguration())
            #expect(worker.log.contains("the open-file limit is below") == (hard < needed), "\(worker.log)")
            #expect(try await worker.terminate(within: .seconds(20)))
        }
    }
}
