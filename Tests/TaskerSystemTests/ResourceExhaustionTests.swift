import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerPostgres
@testable import TaskerWorker

#if canImport(Glibc)
import Glibc
#endif

/// Running out of file descriptors fails the operation that needed one, never the process (issue #11
/// item 5: `pipe()` failing with EMFILE aborted the worker when it opened a database connection).
///
/// Exhausting descriptors in the shared test process would break every test running beside it, so
/// the test re-runs itself in a child process (this test binary, only this test): the child lowers
/// its own `RLIMIT_NOFILE`, fills its descriptor table, and connects to the real test database with
/// a single descriptor free, so the connection's wake-up pipe (two descriptors) fails with a real
/// EMFILE. The parent checks that the child exited normally with the test passed; before the fix the
/// child died on the `precondition` in `SocketWaiter`.
@Suite("Resource exhaustion", .timeLimit(.minutes(2)))
struct ResourceExhaustionTests {
    static let childFlag = "TASKER_TEST_FD_EXHAUSTION_CHILD"
    static let testName = "outOfFileDescriptorsFailsTheConnectAttemptAndTheNextOneSucceeds"

    #if os(Linux)
    @Test func outOfFileDescriptorsFailsTheConnectAttemptAndTheNextOneSucceeds() async throws {
        if ProcessInfo.processInfo.environment[Self.childFlag] == "1" {
            try await Self.connectWithoutDescriptors()
            return
        }
        var environment = ProcessInfo.processInfo.environment
        environment[Self.childFlag] = "1"
        let child = try Subprocess.run(
            URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path,
            ["--testing-library", "swift-testing", "--filter", Self.testName],
            environment: environment, directory: FileManager.default.currentDirectoryPath)
        let text = child.stdout + child.stderr
        #expect(
            child.exitedNormally,
            "the child died on signal \(child.status) when out of file descriptors:\n\(text)")
        #expect(child.status == 0, "\(text)")
        #expect(text.contains(Self.testName) && text.contains("passed"), "the child did not run the test:\n\(text)")
    }

    /// In the child only: one free descriptor, a connect attempt (fails with EMFILE, as a
    /// `PostgresError` the pool's callers retry), then the descriptors back and a connect that works.
    static func connectWithoutDescriptors() async throws {
        let url = try TestEnvironment.adminURL()
        var limit = rlimit()
        #expect(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0)
        limit.rlim_cur = min(limit.rlim_cur, 512)
        #expect(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0)
        var fillers: [Int32] = []
        var openError: Int32 = 0
        while openError == 0 {
            let fd = open("/dev/null", O_RDONLY)
            if fd >= 0 { fillers.append(fd) } else { openError = errno }
        }
        #expect(openError == EMFILE)
        close(fillers.removeLast())  // one descriptor free; the wake-up pipe needs two
        var failure: PostgresError?
        do {
            let connection = try await PostgresConnection.connect(url: url)
            await connection.close()
        } catch {
            failure = error
        }
        for fd in fillers { close(fd) }
        let error = try #require(failure, "connected with a single free file descriptor")
        #expect(error.kind == .connectionFailed)
        #expect(error.isConnectionLoss, "callers must treat it as a failed connect and retry")
        #expect(error.message.contains("wake-up pipe") && error.message.contains("EMFILE"), "\(error)")

        let connection = try await PostgresConnection.connect(url: url)
        let result = try await connection.query("SELECT 1 AS one")
        #expect(result.rows.count == 1)
        await connection.close()
    }
    #endif
}
