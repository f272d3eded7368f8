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

/// `tasker-worker dev-progress`: the live progress display of `scripts/dev`. Once a second it reads
/// the tasks created since it started (tasks and steps by current state, steps per second, task
/// submit→complete and step enqueue→result percentiles) and redraws them in place; when stdout is not
/// a terminal it prints one plain line every few seconds instead. With `--submit-rate R` it also
/// submits the example workflows (namespace `examples`) through `orchestration_task_requests`, R per
/// second, mixed, each with a unique context (on the broker with `[common.queues] backend = "rabbitmq"`). SIGINT/SIGTERM stop it after a final snapshot.
struct ProgressCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "progress",
        abstract: "Live progress of tasks and steps (and, with --submit-rate, a submitter of the example workflows).")

    @Option(help: "Database URL (default: DATABASE_URL, else common.database.url of the configuration).")
    var databaseURL: String?

    @Option(help: "Count tasks created at or after this time: an ISO 8601 timestamp, 'now' (default) or 'all'.")
    var since: String = "now"

    @Option(help: "Submit this many example tasks per second through orchestration_task_requests (0: none).")
    var submitRate: Double = 0

    @Option(help: "Namespace of the example workflows to submit.")
    var namespace: String = "examples"

    @Option(help: "Seconds between snapshots on a terminal.")
    var interval: Double = 1

    @Option(help: "Seconds between lines when stdout is not a terminal (or with --plain).")
    var plainInterval: Double = 5

    @Option(help: "Window (seconds) of the steps-per-second rate.")
    var rateWindow: Double = 5

    @Flag(help: "Plain lines instead of an in-place display, even on a terminal.")
    var plain = false

    @Flag(help: "Print one snapshot and exit.")
    var once = false

    @Flag(help: "With --once: the snapshot as JSON.")
    var json = false

    @Option(help: "Extra line shown above the display (repeatable).")
    var header: [String] = []

    func validate() throws {
        guard submitRate >= 0, submitRate <= 1000 else { throw ValidationError("--submit-rate must be in 0...1000") }
        guard interval >= 0.1, plainInterval >= 0.1 else { throw ValidationError("intervals must be at least 0.1 s") }
        guard rateWindow >= 1 else { throw ValidationError("--rate-window must be at least 1 s") }
        if json && !once { throw ValidationError("--json needs --once") }
    }

    func run() async throws {
        WorkerLogging.bootstrap()
        let url = try resolvedURL()
        let pool = PostgresConnectionPool(
            configuration: PostgresPoolConfiguration(
                url: url, maxConnections: 3, minConnections: 0, applicationName: "tasker-dev-progress"))
        do {
            let sinceDate = try await resolveSince(pool)
            let query = ProgressQuery(since: sinceDate, rateWindowSeconds: rateWindow)
            if once {
                let snapshot = try await pool.transaction { c in try query.snapshot(c) }
                if json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
                    encoder.dateEncodingStrategy = .iso8601
                    print(String(decoding: try encoder.encode(snapshot), as: UTF8.self))
                } else {
                    print(ProgressRenderer.plainLine(snapshot, submitter: nil))
                }
            } else if submitRate > 0 {
                // The requests go where a running orchestration reads them: PGMQ or the broker.
                let common = try OrchestrateCommand.loadConfiguration(nil, command: "progress").common
                try await TaskRequestSender.with(common, pool: pool, connectionName: "tasker-dev progress") { sender in
                    try await live(pool: pool, query: query, sender: sender)
                }
            } else {
                try await live(pool: pool, query: query, sender: nil)
            }
            await pool.close()
        } catch let error as ExitCode {
            await pool.close()
            throw error
        } catch {
            await pool.close()
            FileHandle.standardError.write(Data("tasker-dev progress: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }

    private func resolvedURL() throws -> String {
        if let databaseURL { return databaseURL }
        if let env = ProcessInfo.processInfo.environment["DATABASE_URL"], !env.isEmpty { return env }
        return try OrchestrateCommand.loadConfiguration(nil, command: "dev-progress").common.database.url
    }

    private func resolveSince(_ pool: PostgresConnectionPool) async throws -> Date {
        switch since.lowercased() {
        case "all": return Date(timeIntervalSince1970: 0)
        case "now":
            return try await pool.query("SELECT now() AS now")[0].decode("now", as: Date.self)
        default:
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            if let date = formatter.date(from: since) { return date }
            formatter.formatOptions = [.withInternetDateTime]
            if let date = formatter.date(from: since) { return date }
            throw ValidationError("--since: not an ISO 8601 timestamp, 'now' or 'all': \(since)")
        }
    }

    // MARK: Live display

    private func live(pool: PostgresConnectionPool, query: ProgressQuery, sender: TaskRequestSender?) async throws {
        let terminal = !plain && isatty(STDOUT_FILENO) == 1
        let submitter = sender.map { ExampleSubmitter(sender: $0, namespace: namespace, rate: submitRate) }
        let screen = ProgressScreen(enabled: terminal)
        let header = self.header
        let period = terminal ? interval : plainInterval
        let loop = Task {
            await withTaskGroup(of: Void.self) { group in
                if let submitter { group.addTask { await submitter.run() } }
                group.addTask {
                    while !Task.isCancelled {
                        do {
                            let snapshot = try await pool.transaction { c in try query.snapshot(c) }
                            let stats = submitter?.statistics
                            if terminal {
                                screen.draw(header + ProgressRenderer.lines(snapshot, submitter: stats))
                            } else {
                                ProgressScreen.emit(ProgressRenderer.plainLine(snapshot, submitter: stats))
                            }
                        } catch {
                            // Stopping (SIGINT/SIGTERM) cancels the query in flight: not a failure to show.
                            if Task.isCancelled { break }
                            let line = "[progress] query failed: \(error)"
                            if terminal { screen.draw(header + [line]) } else { ProgressScreen.emit(line) }
                        }
                        try? await Task.sleep(for: .milliseconds(Int(period * 1000)))
                    }
                }
                await group.next()
                group.cancelAll()
            }
        }
        let signals = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { loop.cancel() }
            source.resume()
            return source
        }
        screen.hideCursor()
        await loop.value
        // Final snapshot: what was reached when submission stopped. Retried: the loop's cancellation
        // may have cancelled a statement in flight, and the pool replaces that connection first.
        var lastError: (any Error)?
        var attempts = RetryAttempts(backoff: ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(1)))
        while attempts.failures < 5 {
            do {
                let snapshot = try await pool.transaction { c in try query.snapshot(c) }
                let stats = submitter?.statistics
                if terminal {
                    screen.draw(header + ProgressRenderer.lines(snapshot, submitter: stats, final: true))
                } else {
                    ProgressScreen.emit(ProgressRenderer.plainLine(snapshot, submitter: stats, final: true))
                }
                lastError = nil
                break
            } catch {
                lastError = error
                try? await Task.sleep(for: attempts.failed())
            }
        }
        if let lastError {
            let line = "[progress, final] no final snapshot: \(lastError)"
            if terminal { screen.draw(header + [line]) } else { ProgressScreen.emit(line) }
        }
        screen.showCursor()
        signals.forEach { $0.cancel() }
    }
}
