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
                let queues = try OrchestrateCommand.loadConfiguration(nil, command: "progress").common.queues
                try await TaskRequestSender.with(queues, pool: pool, connectionName: "tasker-dev progress") { sender in
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
            FileHandle.standardError.write(Data("tasker-worker dev-progress: \(error)\n".utf8))
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
        let backoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(1))
        for attempt in 0..<5 {
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
                try? await Task.sleep(for: backoff.delay(forAttempt: attempt))
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

// MARK: - Snapshot

/// Latency percentiles in seconds over `count` samples (nil values when there are none).
struct LatencyPercentiles: Codable, Sendable, Equatable {
    var count: Int
    var p50: Double?
    var p95: Double?
    var p99: Double?
    var max: Double?
}

/// One workflow's tasks since the start.
struct WorkflowProgress: Codable, Sendable, Equatable {
    var name: String
    var total: Int
    var complete: Int
    var error: Int
}

/// What the display shows, read from the database in one pass (also `--once --json`).
struct ProgressSnapshot: Codable, Sendable {
    /// Start of the counted period (tasks created at or after it), UTC.
    var since: Date
    /// Database time of the snapshot.
    var at: Date
    var elapsedSeconds: Double
    var tasksByState: [String: Int]
    var stepsByState: [String: Int]
    var tasksTotal: Int
    var stepsTotal: Int
    var workflows: [WorkflowProgress]
    /// Step transitions to `complete` in the period, and in the last `rateWindowSeconds`.
    var stepsCompleted: Int
    var stepsCompletedInWindow: Int
    /// Tasks that reached `complete` in the last `rateWindowSeconds`.
    var tasksCompletedInWindow: Int
    var rateWindowSeconds: Double
    /// Completed steps per second over the last `rateWindowSeconds` (or the elapsed time, if shorter).
    var stepsPerSecond: Double
    var tasksPerSecond: Double
    /// `tasks.created_at` → `completed_at` of the tasks in state `complete`.
    var taskLatency: LatencyPercentiles
    /// Step `enqueued` → the next `enqueued_for_orchestration` / `enqueued_as_error_for_orchestration`
    /// transition (one sample per attempt).
    var stepLatency: LatencyPercentiles
    /// Step `enqueued` → the next `in_progress` (time in the queue until a worker claimed it).
    var stepQueueWait: LatencyPercentiles
}

/// The SQL behind a `ProgressSnapshot`. Tasks are selected by `requested_at` (indexed; orchestration
/// sets it to the same `NOW()` as `created_at`); latencies use `created_at`/`completed_at` and the
/// step transitions' `created_at`.
struct ProgressQuery: Sendable {
    var since: Date
    var rateWindowSeconds: Double

    static let resultStates = "'enqueued_for_orchestration', 'enqueued_as_error_for_orchestration'"

    func snapshot(_ c: isolated PostgresConnection) throws -> ProgressSnapshot {
        let now: Date = try c.query("SELECT now() AS now")[0].decode("now")
        let sessionTasks = "SELECT task_uuid FROM tasker.tasks WHERE requested_at >= $1::timestamptz AT TIME ZONE 'UTC'"

        var tasksByState: [String: Int] = [:]
        var workflows: [String: WorkflowProgress] = [:]
        for row in try c.query(
            """
            SELECT nt.name AS workflow, COALESCE(tt.to_state, 'pending') AS state, count(*)::int8 AS n
              FROM tasker.tasks t
              JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
              LEFT JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent
             WHERE t.requested_at >= $1::timestamptz AT TIME ZONE 'UTC'
             GROUP BY 1, 2
            """, [since])
        {
            let name: String = try row.decode("workflow")
            let state: String = try row.decode("state")
            let n: Int = try row.decode("n")
            tasksByState[state, default: 0] += n
            var workflow = workflows[name] ?? WorkflowProgress(name: name, total: 0, complete: 0, error: 0)
            workflow.total += n
            if state == "complete" { workflow.complete += n }
            if state == "error" { workflow.error += n }
            workflows[name] = workflow
        }

        var stepsByState: [String: Int] = [:]
        for row in try c.query(
            """
            SELECT COALESCE(wst.to_state, 'pending') AS state, count(*)::int8 AS n
              FROM tasker.workflow_steps ws
              LEFT JOIN tasker.workflow_step_transitions wst
                ON wst.workflow_step_uuid = ws.workflow_step_uuid AND wst.most_recent
             WHERE ws.task_uuid IN (\(sessionTasks))
             GROUP BY 1
            """, [since])
        {
            stepsByState[try row.decode("state", as: String.self), default: 0] += try row.decode("n", as: Int.self)
        }

        let window = rateWindowSeconds
        let counts = try c.query(
            """
            SELECT
              (SELECT count(*)::int8 FROM tasker.workflow_step_transitions wst
                 JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
                WHERE ws.task_uuid IN (\(sessionTasks)) AND wst.to_state = 'complete') AS steps_completed,
              (SELECT count(*)::int8 FROM tasker.workflow_step_transitions wst
                 JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
                WHERE ws.task_uuid IN (\(sessionTasks)) AND wst.to_state = 'complete'
                  AND wst.created_at > ($2::timestamptz - make_interval(secs => $3)) AT TIME ZONE 'UTC') AS steps_window,
              (SELECT count(*)::int8 FROM tasker.tasks t
                 JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent
                WHERE t.requested_at >= $1::timestamptz AT TIME ZONE 'UTC' AND tt.to_state = 'complete'
                  AND t.completed_at > ($2::timestamptz - make_interval(secs => $3)) AT TIME ZONE 'UTC') AS tasks_window
            """, [since, now, window])[0]

        let taskRow = try c.query(
            """
            SELECT count(*)::int8 AS n,
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY d) AS p50,
                   percentile_cont(0.95) WITHIN GROUP (ORDER BY d) AS p95,
                   percentile_cont(0.99) WITHIN GROUP (ORDER BY d) AS p99,
                   max(d) AS max
              FROM (SELECT extract(epoch FROM t.completed_at - t.created_at)::float8 AS d
                      FROM tasker.tasks t
                      JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent
                     WHERE t.requested_at >= $1::timestamptz AT TIME ZONE 'UTC'
                       AND tt.to_state = 'complete' AND t.completed_at IS NOT NULL) samples
            """, [since])[0]

        // Each step transition paired with the latest `enqueued` transition before it.
        let stepRow = try c.query(
            """
            WITH tr AS (
                SELECT wst.to_state, wst.created_at,
                       max(wst.created_at) FILTER (WHERE wst.to_state = 'enqueued') OVER (
                           PARTITION BY wst.workflow_step_uuid ORDER BY wst.sort_key
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS enqueued_at
                  FROM tasker.workflow_step_transitions wst
                  JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
                 WHERE ws.task_uuid IN (\(sessionTasks))
            ), samples AS (
                SELECT to_state IN (\(Self.resultStates)) AS is_result,
                       extract(epoch FROM created_at - enqueued_at)::float8 AS d
                  FROM tr
                 WHERE enqueued_at IS NOT NULL AND (to_state IN (\(Self.resultStates)) OR to_state = 'in_progress')
            )
            SELECT count(*) FILTER (WHERE is_result)::int8 AS rn,
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY d) FILTER (WHERE is_result) AS r50,
                   percentile_cont(0.95) WITHIN GROUP (ORDER BY d) FILTER (WHERE is_result) AS r95,
                   percentile_cont(0.99) WITHIN GROUP (ORDER BY d) FILTER (WHERE is_result) AS r99,
                   max(d) FILTER (WHERE is_result) AS rmax,
                   count(*) FILTER (WHERE NOT is_result)::int8 AS qn,
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY d) FILTER (WHERE NOT is_result) AS q50,
                   percentile_cont(0.95) WITHIN GROUP (ORDER BY d) FILTER (WHERE NOT is_result) AS q95,
                   percentile_cont(0.99) WITHIN GROUP (ORDER BY d) FILTER (WHERE NOT is_result) AS q99,
                   max(d) FILTER (WHERE NOT is_result) AS qmax
              FROM samples
            """, [since])[0]

        let elapsed = max(0, now.timeIntervalSince(since))
        let divisor = max(1, min(window, elapsed))
        let stepsWindow: Int = try counts.decode("steps_window")
        let tasksWindow: Int = try counts.decode("tasks_window")
        return ProgressSnapshot(
            since: since, at: now, elapsedSeconds: elapsed,
            tasksByState: tasksByState, stepsByState: stepsByState,
            tasksTotal: tasksByState.values.reduce(0, +), stepsTotal: stepsByState.values.reduce(0, +),
            workflows: workflows.values.sorted { $0.name < $1.name },
            stepsCompleted: try counts.decode("steps_completed"), stepsCompletedInWindow: stepsWindow,
            tasksCompletedInWindow: tasksWindow, rateWindowSeconds: window,
            stepsPerSecond: Double(stepsWindow) / divisor, tasksPerSecond: Double(tasksWindow) / divisor,
            taskLatency: LatencyPercentiles(
                count: try taskRow.decode("n"), p50: try taskRow.decode("p50"), p95: try taskRow.decode("p95"),
                p99: try taskRow.decode("p99"), max: try taskRow.decode("max")),
            stepLatency: LatencyPercentiles(
                count: try stepRow.decode("rn"), p50: try stepRow.decode("r50"), p95: try stepRow.decode("r95"),
                p99: try stepRow.decode("r99"), max: try stepRow.decode("rmax")),
            stepQueueWait: LatencyPercentiles(
                count: try stepRow.decode("qn"), p50: try stepRow.decode("q50"), p95: try stepRow.decode("q95"),
                p99: try stepRow.decode("q99"), max: try stepRow.decode("qmax")))
    }
}

// MARK: - Rendering

enum ProgressRenderer {
    static let taskStates = [
        "pending", "initializing", "enqueuing_steps", "steps_in_process", "evaluating_results",
        "waiting_for_dependencies", "waiting_for_retry", "blocked_by_failures", "complete", "error",
        "cancelled", "resolved_manually",
    ]
    static let stepStates = [
        "pending", "enqueued", "in_progress", "enqueued_for_orchestration", "enqueued_as_error_for_orchestration",
        "waiting_for_retry", "complete", "error", "cancelled", "resolved_manually",
    ]
    static let shortNames = [
        "enqueued_for_orchestration": "result_queued", "enqueued_as_error_for_orchestration": "error_queued",
        "waiting_for_dependencies": "waiting_deps", "blocked_by_failures": "blocked",
    ]

    static func duration(_ seconds: Double?) -> String {
        guard let seconds else { return "-" }
        if seconds < 1 { return String(format: "%.0f ms", seconds * 1000) }
        if seconds < 100 { return String(format: "%.2f s", seconds) }
        return String(format: "%.0f s", seconds)
    }

    static func clock(_ seconds: Double) -> String {
        let s = Int(seconds)
        return String(format: "%02d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60)
    }

    /// `state n` pairs in lifecycle order, non-zero only.
    static func states(_ counts: [String: Int], order: [String]) -> String {
        let known = order.compactMap { state in counts[state].flatMap { $0 > 0 ? "\(shortNames[state] ?? state) \($0)" : nil } }
        let other = counts.keys.filter { !order.contains($0) }.sorted().map { "\($0) \(counts[$0]!)" }
        let all = known + other
        return all.isEmpty ? "none yet" : all.joined(separator: "  ")
    }

    static func percentiles(_ p: LatencyPercentiles) -> String {
        guard p.count > 0 else { return "no samples yet" }
        return "p50 \(duration(p.p50))  p95 \(duration(p.p95))  p99 \(duration(p.p99))  max \(duration(p.max))  (n=\(p.count))"
    }

    static func lines(_ s: ProgressSnapshot, submitter: ExampleSubmitter.Statistics?, final: Bool = false) -> [String] {
        var lines: [String] = []
        var title = "tasker dev  \(clock(s.elapsedSeconds))"
        if let submitter {
            title += "  submitted \(submitter.submitted) at \(formatRate(submitter.rate))/s"
            if submitter.failed > 0 { title += " (\(submitter.failed) failed)" }
        }
        title += final ? "  [stopped: final snapshot]" : "  (Ctrl-C drains and stops)"
        lines.append(title)
        lines.append("tasks   \(pad(s.tasksTotal))  \(states(s.tasksByState, order: taskStates))")
        lines.append("steps   \(pad(s.stepsTotal))  \(states(s.stepsByState, order: stepStates))")
        lines.append(
            String(
                format: "rate    %.1f steps/s  %.1f tasks/s completed (last %.0f s)   %d steps completed",
                s.stepsPerSecond, s.tasksPerSecond, min(s.rateWindowSeconds, max(1, s.elapsedSeconds)),
                s.stepsCompleted))
        lines.append("task    submit→complete   \(percentiles(s.taskLatency))")
        lines.append("step    enqueue→result    \(percentiles(s.stepLatency))")
        lines.append("step    enqueue→claim     \(percentiles(s.stepQueueWait))")
        let flows = s.workflows.map { w in
            "\(w.name.replacingOccurrences(of: "_workflow", with: "")) \(w.complete)/\(w.total)"
                + (w.error > 0 ? " (\(w.error) error)" : "")
        }
        lines.append("done    " + (flows.isEmpty ? "no tasks yet" : flows.joined(separator: "  ")))
        return lines
    }

    static func plainLine(_ s: ProgressSnapshot, submitter: ExampleSubmitter.Statistics?, final: Bool = false) -> String {
        var parts = ["[progress\(final ? ", final" : "")] \(clock(s.elapsedSeconds))"]
        if let submitter { parts.append("submitted \(submitter.submitted)") }
        parts.append("tasks \(s.tasksTotal): \(states(s.tasksByState, order: taskStates))")
        parts.append("steps \(s.stepsTotal): \(states(s.stepsByState, order: stepStates))")
        parts.append(String(format: "%.1f steps/s", s.stepsPerSecond))
        parts.append("task p50/p95/p99 \(duration(s.taskLatency.p50))/\(duration(s.taskLatency.p95))/\(duration(s.taskLatency.p99))")
        parts.append("step p50/p95/p99 \(duration(s.stepLatency.p50))/\(duration(s.stepLatency.p95))/\(duration(s.stepLatency.p99))")
        return parts.joined(separator: " | ")
    }

    private static func pad(_ n: Int) -> String {
        let text = String(n)
        return text.count >= 6 ? text : String(repeating: " ", count: 6 - text.count) + text
    }

    private static func formatRate(_ rate: Double) -> String {
        rate == rate.rounded() ? String(Int(rate)) : String(format: "%.1f", rate)
    }
}

/// Redraws a block of lines in place (ANSI: cursor up, clear to end of screen), one write per frame.
final class ProgressScreen: Sendable {
    private let enabled: Bool
    /// Lines of the last frame (held while a frame is written, so frames never interleave).
    private let drawn = Mutex(0)

    init(enabled: Bool) { self.enabled = enabled }

    func draw(_ lines: [String]) {
        guard enabled else { return }
        let width = Self.terminalWidth()
        drawn.withLock { drawn in
            var frame = drawn > 0 ? "\r\u{1B}[\(drawn)A" : "\r"
            frame += "\u{1B}[J"
            for line in lines {
                frame += (line.count >= width ? String(line.prefix(max(1, width - 1))) : line) + "\n"
            }
            drawn = lines.count
            FileHandle.standardOutput.write(Data(frame.utf8))
        }
    }

    /// One plain line on stdout, unbuffered.
    static func emit(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

    func hideCursor() { if enabled { FileHandle.standardOutput.write(Data("\u{1B}[?25l".utf8)) } }
    func showCursor() { if enabled { FileHandle.standardOutput.write(Data("\u{1B}[?25h".utf8)) } }

    static func terminalWidth() -> Int {
        var size = winsize()
        #if canImport(Glibc)
        let request = UInt(TIOCGWINSZ)
        #else
        let request = TIOCGWINSZ
        #endif
        if ioctl(STDOUT_FILENO, request, &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 120
    }
}

// MARK: - Submitter

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
